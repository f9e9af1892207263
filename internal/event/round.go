package event

// FirstRound is the token of the marker an event's first delivery round
// holds while it records its attempts (the store's HoldFirstRound and
// FinishRound), beside the markers of its redelivery rounds, whose tokens
// are 32 hex digits (128 random bits), never this.
const FirstRound = "first"
