package contract_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/triggers-dev/triggers/contract"
)

func ExampleRetrySchedule_Next() {
	s := contract.DefaultRetrySchedule()
	rnd := rand.New(rand.NewPCG(1, 2)) // seeded: the same delays every run
	fmt.Println("attempt 1: at once")
	for failed := 1; ; failed++ {
		d, ok := s.Next(failed, rnd)
		if !ok {
			fmt.Printf("attempt %d failed: give up\n", failed)
			break
		}
		fmt.Printf("attempt %d: %v later (%v ± 20%%)\n", failed+1, d.Round(time.Second), s[failed-1])
	}
	// Output:
	// attempt 1: at once
	// attempt 2: 5s later (5s ± 20%)
	// attempt 3: 4m55s later (5m0s ± 20%)
	// attempt 4: 30m6s later (30m0s ± 20%)
	// attempt 5: 1h56m38s later (2h0m0s ± 20%)
	// attempt 6: 5h35m44s later (5h0m0s ± 20%)
	// attempt 7: 9h33m12s later (10h0m0s ± 20%)
	// attempt 8: 11h16m38s later (10h0m0s ± 20%)
	// attempt 8 failed: give up
}

func ExampleParseRetrySchedule() {
	s, err := contract.ParseRetrySchedule("10s, 1m, 10m, 1h")
	fmt.Println(s, len(s)+1, "attempts", err)
	_, err = contract.ParseRetrySchedule("10s,1m,30s")
	fmt.Println(err)
	// Output:
	// 10s,1m,10m,1h 5 attempts <nil>
	// invalid retry schedule: element 3 (30s) is shorter than element 2 (1m); delays must not decrease
}
