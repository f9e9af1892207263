package emf

import "github.com/triggers-dev/triggers/contract"

// Webhook delivery's metrics (the webhook function), names from contract.
const (
	MetricWebhookAttempts       = contract.MetricWebhookAttempts
	DimensionOutcome            = contract.DimensionOutcome
	MetricSubscriptionsDisabled = contract.MetricSubscriptionsDisabled
)

// WebhookAttempt writes one WebhookAttempts line (count 1) with dimension
// Outcome: delivered, failed or gone.
func (w *Writer) WebhookAttempt(outcome string) {
	w.write([][]byte{w.line(w.now().UnixMilli(), MetricWebhookAttempts, unitCount, map[string]string{DimensionOutcome: outcome}, 1)})
}

// SubscriptionDisabled writes one SubscriptionsDisabled line (count 1).
func (w *Writer) SubscriptionDisabled() {
	w.write([][]byte{w.line(w.now().UnixMilli(), MetricSubscriptionsDisabled, unitCount, nil, 1)})
}
