// Package webhook is the core of push delivery: it signs an event the way
// the Standard Webhooks specification (https://www.standardwebhooks.com/)
// says, sends it to a subscriber's URL without letting that URL reach
// inside our network, classifies the answer, and says when to try again.
// It has no AWS imports and knows nothing of subscriptions or storage;
// the subscriptions API, the delivery Lambda function and its construct
// build on it.
//
// # Signing (Standard Webhooks, symmetric "v1")
//
// A Secret is 24 to 64 random bytes, written "whsec_" + base64
// (NewSecret, ParseSecret, Secret.Encode); it never prints its key.
// Sign sets three headers on a request:
//
//	webhook-id:        the message id, the same for every attempt (use the event id)
//	webhook-timestamp: unix seconds of this attempt
//	webhook-signature: v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>
//
// With several secrets the signature header holds one "v1,..." per
// secret, separated by spaces: during a secret rotation the old and the
// new secret both sign, and a subscriber verifying with either accepts
// the message. A Verifier is the receiving side (for subscribers, and for
// our own tests): all three headers present once, the timestamp within 5
// minutes of the clock in either direction, and one v1 signature matching
// under one of its secrets, compared in constant time. Its errors are
// distinct sentinels (ErrMissingID, ErrInvalidSignature,
// ErrTimestampTooOld, ErrSignatureMismatch, ...). The implementation is
// checked against the test vector the reference libraries publish.
//
// # Retries (the Svix schedule)
//
// The retry schedule is contract.RetrySchedule (in package contract, so
// that the constructs validate it without linking this package):
// DefaultRetrySchedule is Svix's, which the Standard Webhooks
// specification gives as its example: at once, then 5s, 5m, 30m, 2h, 5h,
// 10h and 10h; 8 attempts over about 27.6 hours, then give up.
// RetrySchedule.Next adds ±20% jitter drawn from an injected random
// source, so deliveries that failed together spread out and tests can
// assert exact values.
//
// # Targets and SSRF
//
// Subscribers choose the URL, so a URL is an attack on our network until
// proven otherwise (the specification's "Server side request forgery"
// section). ValidateTarget, run when a subscription is created, requires
// an https URL without credentials or fragment, on port 443 or 1024-65535,
// whose host resolves only to public addresses (CheckAddr: no loopback,
// private, link-local or metadata, CGNAT, multicast, documentation or
// other special-purpose ranges, also not disguised as IPv4-mapped,
// IPv4-translated, NAT64 or 6to4 IPv6). Because DNS answers change (DNS
// rebinding), the client of NewHTTPClient checks again the address each
// connection is actually made to (its dialer's control function), uses no proxy, and does
// not follow redirects. ClientOptions.AllowPrivate turns the address
// check off (except for the metadata addresses) for local development and
// tests against httptest servers only. The errors a subscriber sees (a
// refused URL's TargetError, an Attempt's Error) do not show the
// deployment's network: neither the DNS server asked, nor the
// connection's local address, nor an address a host name resolved to
// (only its class).
//
// # Sending
//
// Send makes one attempt and returns an Attempt: the status, the latency,
// the first 1000 characters of the response, and the Outcome:
//
//	Delivered  2xx: done.
//	Gone       410 Gone: the subscriber wants no more (Zapier REST Hooks
//	           semantics, also in Standard Webhooks); disable the subscription.
//	Failed     anything else, redirects, timeouts and connection errors
//	           included: retry after contract.RetrySchedule.Next, or give up.
//
// A 429 or 5xx answer's Retry-After is in Attempt.RetryAfter
// (ParseRetryAfter). Not here (yet): asymmetric "v1a" signatures, and
// throttling an endpoint that answers 429/502/504.
package webhook
