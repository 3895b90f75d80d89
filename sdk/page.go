package sdk

// CaptureIdentity names the capture an answer came from; a new instance (a
// different capture loaded) voids every older cursor.
type CaptureIdentity struct {
	// Node is this server's node name (--node-name).
	Node string `json:"node" desc:"server node name"`
	// Instance changes whenever a different capture is loaded.
	Instance string `json:"instance" desc:"capture instance; a new one voids old cursors"`
	// DialogGeneration moves when dialogs leave the store (an eviction
	// round) or the capture is swapped; it does not move on every mutation
	// (the store's revision does). A row read under one generation may be
	// gone under the next.
	DialogGeneration uint64 `json:"dialog_generation" desc:"moves on eviction"`
	// StreamGeneration moves when streams leave the stream store (eviction)
	// or the capture is swapped.
	StreamGeneration uint64 `json:"stream_generation" desc:"moves on eviction"`
}

// SourceState is what every capture-derived answer says about the read.
type SourceState struct {
	// Exhausted: the source was read to its end.
	Exhausted bool
	// StoppedEarly: reading stopped before the end (e.g. a truncated file).
	StoppedEarly bool
	// Loading: a file load is still running, so rows keep arriving until it
	// ends (a live source or a HEP listener alone is not loading: it has no
	// end to wait for).
	Loading bool
	// Identity of the capture.
	Identity CaptureIdentity
}

// SourceFlags are the two honesty flags every capture-derived answer
// carries; embed it in an output struct.
type SourceFlags struct {
	// SourceExhausted: the source was read to its end (files load in the background).
	SourceExhausted bool `json:"source_exhausted" desc:"the source was read to its end"`
	// SourceStoppedEarly: reading stopped before the end.
	SourceStoppedEarly bool `json:"source_stopped_early" desc:"reading stopped before the end"`
}

// Flags returns the source flags of a state.
func (s SourceState) Flags() SourceFlags {
	return SourceFlags{SourceExhausted: s.Exhausted, SourceStoppedEarly: s.StoppedEarly}
}

// Page is the envelope of every paged answer; embed it in the output struct
// beside the rows array (dialogs, hits, streams, findings ...).
type Page struct {
	// Returned counts the rows in this page.
	Returned int `json:"returned" desc:"rows in this page"`
	// TotalMatched counts matches overall; absent where the tool cannot know.
	TotalMatched *int `json:"total_matched,omitempty" desc:"matches overall"`
	// Truncated: more rows exist. false is omitted until the source is read whole.
	Truncated *bool `json:"truncated,omitempty" desc:"more rows exist; false only once the source is read whole"`
	// NextCursor continues the listing; null on the last page.
	NextCursor *string `json:"next_cursor" desc:"cursor of the next page; null on the last page"`
	SourceFlags
	// CaptureIdentity of the capture the page came from.
	CaptureIdentity CaptureIdentity `json:"capture_identity" desc:"capture the page came from"`
	// SchemaVersion of this response type.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// NewPage fills the envelope. total < 0 means the total is unknown (omitted).
// more says rows remain after this page, next is their cursor. truncated is
// true when more rows exist; false is stated only when the source was read
// whole, and omitted otherwise, because a partial read cannot claim a page
// holds every match.
func NewPage(returned, total int, more bool, next string, src SourceState, schemaVersion int) Page {
	p := Page{
		Returned:        returned,
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		SchemaVersion:   schemaVersion,
	}
	if total >= 0 {
		p.TotalMatched = &total
	}
	switch {
	case more:
		t := true
		p.Truncated = &t
		if next != "" {
			p.NextCursor = &next
		}
	case src.Exhausted && !src.StoppedEarly:
		f := false
		p.Truncated = &f
	}
	return p
}

// ResumeAt gives the last page of a listing read while a file load is still
// running the cursor to continue from: rows the load adds later follow it,
// so a client paging until next_cursor is null gets every row of the whole
// file exactly once instead of stopping wherever the load stood. cursor is
// the last row's cursor, or the request's own cursor when the page is empty;
// "" leaves the page as it is. A page with more rows already carries its
// cursor. Once the load has ended (and for a live source or a HEP listener,
// which never end on their own: tail_dialogs follows those) the last page's
// cursor stays null.
func (p *Page) ResumeAt(src SourceState, cursor string) {
	if cursor == "" || p.NextCursor != nil || !src.Loading || src.Exhausted || src.StoppedEarly {
		return
	}
	p.NextCursor = &cursor
}
