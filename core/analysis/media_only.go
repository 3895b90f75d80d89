package analysis

// DiagnoseMedia is Diagnose's Media part alone: the same judgement over the
// same inputs (the dialog's streams and SDP endpoints from src, and whether
// the capture holds any media), without the signaling diagnosis and the
// evidence clauses. The filter fields one_way, nat_mismatch, no_media, the
// asymmetries and late_media read it (core/query), once per change of the
// dialog or its media.
func DiagnoseMedia(d DialogFacts, src MediaSource, opts Options) MediaDiagnosis {
	opts = opts.withDefaults()
	streams := src.StreamsFor(d.CallID)
	return diagnoseMedia(d, streams, src.EndpointsFor(d.CallID), len(streams) > 0 || CaptureHasMedia(src), opts, natOf(src))
}
