package emf

import "github.com/triggers-dev/triggers/contract"

// WebhookAttempt writes one WebhookAttempts line (count 1) with dimension
// Outcome: delivered, failed or gone.
func (w *Writer) WebhookAttempt(outcome string) {
	w.write([][]byte{w.line(w.now().UnixMilli(), contract.MetricWebhookAttempts, unitCount, map[string]string{contract.DimensionOutcome: outcome}, 1)})
}

// SubscriptionDisabled writes one SubscriptionsDisabled line (count 1).
func (w *Writer) SubscriptionDisabled() {
	w.write([][]byte{w.line(w.now().UnixMilli(), contract.MetricSubscriptionsDisabled, unitCount, nil, 1)})
}

// WebhookDeferred writes one WebhookDeferred line (count 1) with dimension
// Reason, and the tenant and subscription_id as properties.
func (w *Writer) WebhookDeferred(tenant, subscriptionID, reason string) {
	w.write([][]byte{w.lineWith(w.now().UnixMilli(), contract.MetricWebhookDeferred, unitCount,
		map[string]string{contract.DimensionReason: reason}, map[string]string{"tenant": tenant, "subscription_id": subscriptionID}, 1)})
}

// CircuitOpened writes one WebhookCircuitsOpened line (count 1, no
// dimension) with the tenant, subscription_id and cause as properties.
func (w *Writer) CircuitOpened(tenant, subscriptionID, cause string) {
	w.write([][]byte{w.lineWith(w.now().UnixMilli(), contract.MetricWebhookCircuitsOpened, unitCount,
		nil, map[string]string{"tenant": tenant, "subscription_id": subscriptionID, "cause": cause}, 1)})
}
