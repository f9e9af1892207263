package webhook_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/triggers-dev/triggers/internal/webhook"
)

// Sign a message and verify it, as a subscriber would. The secret,
// message and signature are the Standard Webhooks test vector.
func Example() {
	secret, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		log.Fatal(err)
	}
	body := []byte(`{"test": 2432232314}`)
	sent := time.Unix(1614265330, 0)

	h := http.Header{}
	if err := webhook.Sign(h, "msg_p5jXN8AQM9LWM0D4loKWxJek", sent, body, secret); err != nil {
		log.Fatal(err)
	}
	fmt.Println(webhook.HeaderSignature+":", h.Get(webhook.HeaderSignature))

	// The receiver, a minute later by its clock.
	v := &webhook.Verifier{
		Secrets: []webhook.Secret{secret},
		Now:     func() time.Time { return sent.Add(time.Minute) },
	}
	fmt.Println("verify:", v.Verify(h, body))
	fmt.Println("tampered:", v.Verify(h, []byte(`{"test": 2432232315}`)))
	// Output:
	// webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// verify: <nil>
	// tampered: no matching webhook signature
}

// During a rotation both secrets sign; a receiver that knows either one
// accepts the message.
func ExampleSignature_rotation() {
	oldSecret, newSecret := webhook.NewSecret(), webhook.NewSecret()
	body := []byte(`{}`)
	now := time.Now()
	h := http.Header{}
	if err := webhook.Sign(h, "msg_1", now, body, oldSecret, newSecret); err != nil {
		log.Fatal(err)
	}
	stillOld := &webhook.Verifier{Secrets: []webhook.Secret{oldSecret}}
	alreadyNew := &webhook.Verifier{Secrets: []webhook.Secret{newSecret}}
	fmt.Println(stillOld.Verify(h, body), alreadyNew.Verify(h, body))
	// Output: <nil> <nil>
}

// staticResolver answers every lookup with the same addresses.
type staticResolver []netip.Addr

func (r staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

func ExampleValidateTarget() {
	ctx := context.Background()
	public := staticResolver{netip.MustParseAddr("93.184.215.14")}
	rebound := staticResolver{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("::ffff:169.254.169.254")}

	_, err := webhook.ValidateTarget(ctx, "https://hooks.example.com/in", public)
	fmt.Println(err)
	_, err = webhook.ValidateTarget(ctx, "https://hooks.example.com/in", rebound)
	fmt.Println(err)
	_, err = webhook.ValidateTarget(ctx, "http://hooks.example.com/in", public)
	fmt.Println(err)
	// Output:
	// <nil>
	// invalid webhook URL: host "hooks.example.com": resolves to a non-public address: IPv4-mapped IPv6 (::ffff:0:0/96) of one that is the instance metadata service, link-local (169.254.169.254/32)
	// invalid webhook URL: scheme "http": must be "https"
}

// One attempt against a local test server. AllowPrivate is only for such
// tests: in production the client refuses loopback addresses.
func ExampleSend() {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, "unsubscribed")
	}))
	defer srv.Close()
	client := webhook.NewHTTPClient(webhook.ClientOptions{
		AllowPrivate: true,
		TLSConfig:    srv.Client().Transport.(*http.Transport).TLSClientConfig,
	})
	a := webhook.Send(context.Background(), client, webhook.Request{
		URL:     srv.URL + "/hooks",
		MsgID:   "01a20560-10e0-7200-8e3b-114c52426543",
		Body:    []byte(`{"event_type":"user.created"}`),
		Secrets: []webhook.Secret{webhook.NewSecret()},
	})
	fmt.Println(a.Outcome, a.StatusCode, a.ResponseBody)
	// Output: gone 410 unsubscribed
}
