package engine

// SetSIPBatch sets the SIP pipeline's batch bounds (sipshard.go) for a
// test and returns what restores them. Not for parallel tests.
func SetSIPBatch(items, arena int) (restore func()) {
	oi, oa := sipBatchItems, sipBatchArena
	sipBatchItems, sipBatchArena = items, arena
	return func() { sipBatchItems, sipBatchArena = oi, oa }
}

// SIPWorkerBatches counts the batches the SIP pipeline's workers parsed
// since the process started.
func SIPWorkerBatches() uint64 { return sipWorkerBatches.Load() }

// SetInlineQueueMax sets how many SDP events the router's media share of a
// two-core load waits for its first packet (sharded.go) for a test and
// returns what restores it. Not for parallel tests.
func SetInlineQueueMax(n int) (restore func()) {
	old := inlineQueueMax
	inlineQueueMax = n
	return func() { inlineQueueMax = old }
}

// SetInlineShare sets the router's share of host pairs on two cores (in
// 64ths) for a test and returns the restore.
func SetInlineShare(n uint64) func() {
	old := inlineShare
	inlineShare = n
	return func() { inlineShare = old }
}
