// Package query is the dialog query layer every tool that selects, pages,
// counts or searches dialogs shares: list_dialogs, find_problems,
// aggregate_dialogs, search_messages and get_dialog in the core bundle, and
// the signaling, security and vCon tools after them. It knows nothing of
// MCP: it returns Go values, and the bundles shape and fence them.
//
// # Records
//
// [Record] adapts one dialog (its row, and on demand its messages, its RTP
// streams and its media diagnosis) to [filter.Record] for the 32 fields of
// the filter language. Values that were not measured are absent, never zero
// or false. The costly parts load lazily, only when the filter reads a field
// that needs them:
//
//   - the row (dialog.Summary): from.user, to.user, method, call_id, state,
//     msg_count, retransmits, duration (the answered call's duration, 2xx to
//     BYE, absent when not answered and ended), pdd and setup_time (seconds,
//     absent when not measured);
//   - what the store notes of the retained messages as they arrive
//     (dialog.Extra, no message parsed again): ua (the first non-empty
//     User-Agent, or Server on a response), src.ip, dst.ip, src.port,
//     dst.port (the first message of the row's leg, the call when the
//     Call-ID holds one: docs/data-model.md), and group_dialogs' to_domain
//     and next_hop;
//   - the retained messages themselves: payload (the raw text of each);
//   - the linked RTP streams (the stream store's StreamsFor; UDPTL fax flows
//     are not RTP and are skipped): rtp.codec and rtp.ssrc (each stream),
//     rtp.loss (the worst stream's loss_pct), rtp.jitter (the worst stream's
//     jitter_ms, the RFC 3550 running value rtp_stats reports), rtp.packets
//     (the sum), rtp.mos (the worst MOS among streams whose MOS is grounded:
//     a placeholder MOS never selects a dialog, as the rtp_stats MOS bounds
//     and engine.md's ungrounded exclusion require; absent when no stream is
//     grounded), rtp.orphaned (false for a dialog with streams, since a
//     stream linked to a dialog is not orphaned; absent without streams);
//   - the media diagnosis (core/analysis): one_way, nat_mismatch, no_media,
//     the four asymmetries and late_media, present only when the diagnosis
//     is applicable (there was media or SDP to judge), absent otherwise.
//
// # Pages
//
// [Querier.List] returns the rows matching a filter in created_at (or
// updated_at) order, Call-ID breaking ties, after a cursor of the form
// "<RFC 3339>|<Call-ID>". Rows are compared as (time, Call-ID) tuples, never
// as text, so paging with the cursor of the last row returned yields every
// row exactly once even when many rows share a timestamp. Every page also
// counts every match (TotalMatched) and the matches per method (ByMethod).
//
// # Maintained state
//
// List in created_at order, Aggregate and Group answer from state kept per
// dialog store (maintained.go) rather than from a reading of every dialog:
// each dialog's row, its Extra, its folded RTP values and its media
// diagnosis, recomputed when that dialog or its media changes (the stores
// list what changed: dialog.Store.DrainChangeSet, media.Store.DrainChanges;
// tracking starts with the first query, so a batch run never pays for it),
// and per filter asked for (at most 16, least recently used dropped) the
// set of matching dialogs with their count and per-method counts, the
// tallies by dimension and the group accumulators asked for over it. A
// call first applies what changed since the previous one, then reads the
// page (a binary search to the cursor and a walk of the matching set), the
// buckets or the groups. Between calls, a catch-up goroutine woken by the
// dialog store when 1,024 dialogs, or half an eviction batch if more, have
// changed (dialog.Store.WakeOnChanges: an eviction batch, or a writer far
// ahead of the queries) applies the changes a chunk of 256 per hold of the
// state's lock, so a call waits for
// at most one chunk and applies only what is left; it never answers from a
// half-applied drain. It applies a chunk only when no call started in the
// last 2 ms (calls that come faster catch up by themselves), runs while
// calls come and ends 10 s after the last one. The first call builds the state from the whole
// store, and the first call with a new filter evaluates it once on every
// dialog. group_dialogs' INVITEs still ringing are judged against the
// capture's end when the answer is made (Classify's timers move with it).
// The answers equal a recomputation (TestMaintainedEqualsRecomputed...);
// tail_dialogs (updated_at order), timeline, window, await and search read
// the rows as below.
//
// The rows of the dialog store, in order, are kept between calls
// as long as the store's revision does not move. The store keeps its own
// created_at index as dialogs open and leave, so no listing sorts it.
//
// # Aggregation and search
//
// [Querier.Aggregate] counts the matching dialogs by one [Dimension]: each
// dialog lands in exactly one bucket ("(none)" when the value is absent), so
// the buckets plus OtherCount always equal TotalMatched.
//
// [Querier.Search] finds a substring (ASCII case-insensitive) in the method,
// From, To, User-Agent and body of every retained message and pages the
// hits by (created_at, Call-ID, message index).
package query
