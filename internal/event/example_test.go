package event_test

import (
	"fmt"
	"time"

	"github.com/triggers-dev/triggers/internal/event"
)

// An event id carries its microsecond timestamp, so the table's sort key
// (timestamp#event_id) follows from the id alone.
func ExampleSortKeyForID() {
	sk, err := event.SortKeyForID("01a2054b-f8ba-7375-9175-608e01a3eb60")
	fmt.Println(sk, err)
	// Output: 2026-11-22T22:06:34.682885Z#01a2054b-f8ba-7375-9175-608e01a3eb60 <nil>
}

func ExampleNewID() {
	id, ts, _ := event.NewID(time.Date(2025, 11, 11, 10, 30, 45, 123456789, time.UTC), nil)
	got, _ := event.ParseID(id)
	fmt.Println(event.FormatTime(ts), got.Equal(ts))
	// Output: 2025-11-11T10:30:45.123456Z true
}

func ExampleCanTransition() {
	fmt.Println(event.CanTransition(event.Received, event.Delivered), event.CanTransition(event.Delivered, event.Failed))
	// Output: true false
}

func ExampleValidNumber() {
	fmt.Println(event.ValidNumber("123456789012345678901234567890"))
	fmt.Println(event.ValidNumber("1e126"))
	// Output:
	// <nil>
	// 1e126 is too large; DynamoDB numbers are below 1E+126
}
