package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
)

// resealStats counts what resealSecrets did.
type resealStats struct {
	tenants, subscriptions int
	// sealed counts the subscriptions whose plain-text secrets were
	// sealed (or, with dryRun, would be); raced those a rotation or a
	// delete changed under the reseal (left as they are: a rotation seals
	// the secret it adds, and the plain one ends with its overlap);
	// invalid those holding a plain-text value that is not a valid secret
	// (left as they are, reported: the webhook function skips such a
	// value, and only a rotation replaces it).
	sealed, raced, invalid int
}

// resealSecrets seals in place every signing secret stored in plain text
// ("whsec_...", written before secrets were sealed) in the subscriptions of
// every tenant that has an API key (apikey.Store.List), and with
// scanEvents of every tenant holding a subscription in the events table
// (store.Store.SubscriptionTenants: a scan of the whole table): each with the
// subscription's own KMS encryption context (secretbox.Box.Seal), so the
// same secrets keep signing (receivers change nothing) and no plain one is
// left in the table's items from then on. A subscription is written only
// if its secrets are still the ones read (store.ReplaceSecrets). dryRun
// reads and counts without sealing or writing. Each subscription sealed is
// reported on out by tenant and id, never the secret.
func resealSecrets(ctx context.Context, keys *apikey.Store, st *store.Store, box *secretbox.Box, dryRun, scanEvents bool, out io.Writer) (resealStats, error) {
	var stats resealStats
	all, err := keys.List(ctx, "")
	if err != nil {
		return stats, err
	}
	var tenants []string
	for _, k := range all {
		tenants = append(tenants, k.TenantID)
	}
	if scanEvents {
		// Tenants whose key items were deleted by hand hold
		// subscriptions all the same.
		more, err := st.SubscriptionTenants(ctx)
		if err != nil {
			return stats, err
		}
		tenants = append(tenants, more...)
	}
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	for _, tenant := range tenants {
		stats.tenants++
		subs, err := st.ListSubscriptions(ctx, tenant)
		if err != nil {
			return stats, fmt.Errorf("tenant %s: %w", tenant, err)
		}
		for _, sub := range subs {
			stats.subscriptions++
			next, plain, err := sealPlain(ctx, box, tenant, sub, dryRun)
			if errors.Is(err, errInvalidSecret) {
				// One bad value must not stop the run (every rerun would
				// stop at it, and nothing after it would ever be sealed;
				// found by review).
				stats.invalid++
				fmt.Fprintf(out, "left as is, %v\n", err)
				continue
			}
			if err != nil {
				return stats, err
			}
			if plain == 0 {
				continue
			}
			if !dryRun {
				err := st.ReplaceSecrets(ctx, tenant, sub.ID, sub.Secrets, next)
				if errors.Is(err, event.ErrRotationConflict) || errors.Is(err, event.ErrSubscriptionNotFound) {
					stats.raced++
					fmt.Fprintf(out, "changed meanwhile, left as is: tenant %s subscription %s\n", tenant, sub.ID)
					continue
				}
				if err != nil {
					return stats, fmt.Errorf("tenant %s subscription %s: %w", tenant, sub.ID, err)
				}
			}
			stats.sealed++
			verb := "sealed"
			if dryRun {
				verb = "would seal"
			}
			fmt.Fprintf(out, "%s %d plain-text secret(s): tenant %s subscription %s\n", verb, plain, tenant, sub.ID)
		}
	}
	return stats, nil
}

// errInvalidSecret marks sealPlain's error for a plain-text value that is
// not a valid secret.
var errInvalidSecret = errors.New("not a valid secret")

// sealPlain returns sub's secrets with each plain-text one sealed (kept as
// it is with dryRun), and how many were plain. A plain-text value that is
// not a valid secret is an errInvalidSecret error, with dryRun too, which
// names the subscription and the value's place, never the value.
func sealPlain(ctx context.Context, box *secretbox.Box, tenant string, sub event.Subscription, dryRun bool) ([]string, int, error) {
	next := slices.Clone(sub.Secrets)
	plain := 0
	for i, stored := range sub.Secrets {
		if !strings.HasPrefix(stored, webhook.SecretPrefix) {
			continue
		}
		plain++
		sec, err := webhook.ParseSecret(stored)
		if err != nil {
			return nil, 0, fmt.Errorf("tenant %s subscription %s: secret %d is %w", tenant, sub.ID, i+1, errInvalidSecret)
		}
		if dryRun {
			continue
		}
		if next[i], err = box.Seal(ctx, tenant, sub.ID, sec); err != nil {
			return nil, 0, fmt.Errorf("tenant %s subscription %s: %w", tenant, sub.ID, err)
		}
	}
	return next, plain, nil
}
