// Package correlate finds the other legs of a call: the dialogs a B2BUA, an
// SBC or a proxy that changed the Call-ID created for the same call.
//
// # Strategies
//
// Each strategy names a way two Call-IDs can be tied together. They are
// evaluated in descending score; a candidate leg takes the first strategy
// that matches it, and the legs are then sorted by score:
//
//	session_id                    100  RFC 7989 Session-ID: the non-nil UUID halves
//	                                   intersect (the halves swap across a B2BUA,
//	                                   so strings are never compared whole)
//	x_call_id                     100  a header naming another Call-ID
//	                                   (default list: X-Call-ID), in either
//	                                   direction, or two legs naming the same one
//	charging_vector_related_icid   95  one leg's P-Charging-Vector related-icid is
//	                                   the other's icid-value
//	sdp_origin                     90  an SDP o= tuple (username, sess-id, nettype,
//	                                   addrtype, address; the version excluded),
//	                                   or a sess-id and version whatever the
//	                                   address (an SBC that rewrote it), shared
//	                                   by legs alive at the same time
//	charging_vector_icid           85  a shared P-Charging-Vector icid-value (the
//	                                   ICID itself is never returned)
//	via_branch                     80  a Via branch shared by INVITEs of both legs
//	embedded_tag                   75  a tag of one leg (8 characters or more)
//	                                   inside a tag or the Call-ID of the other,
//	                                   started within the window (B2BUAs derive
//	                                   the far leg's tag from the near one's)
//	same_users                     60  not an identifier: two calls with the same
//	                                   From and To users (numbers compared on their
//	                                   last 7 digits) started within the window
//	timing_heuristic               50  not an identifier: legs of the same kind
//	                                   (state machine family) that share a
//	                                   signaling address and started within the
//	                                   correlation window (2 s)
//
// Every strategy but the last two is an identifier match. A same_users or
// timing match is a guess, and is reported as one: it carries the observed
// gap, read from capture timestamps only. A caller that shows it beside a
// live capture may disclose the clock that stamped those frames
// (ReadClock); a file's frames were stamped by another host, whose clock
// this one says nothing about. The package
// never computes a "same call" identifier across legs: across a
// re-originating B2BUA everything identifying is new on the far side, and an
// identifier derived from the remainder would look like proof.
//
// # Identifiers that identify nothing
//
// Some values on the wire look like identifiers but are constants of an
// implementation: an SDP sess-id of 0 (softphones and SBCs that ignore
// RFC 4566's uniqueness requirement send it for every call), the RFC 4566
// and RFC 3264 example values (2890844526...), any sess-id that both
// parties of one dialog send or that appears under three distinct origins
// (username and address: a rewriting SBC accounts for two), and Via branches
// shorter than 8 characters (RFC 2543 branches such as "0" or "1", or a bare
// magic cookie). They are not indexed. An SDP origin also ties two legs only
// when both were alive at the same time (their spans, widened by the
// correlation window, overlap): a phone that reuses its o= line on every call
// would otherwise tie all its calls together.
//
// # No leg found
//
// ProxyEvidence says whether a dialog's own messages show a proxy that kept
// the Call-ID (a request seen on two hops, one more Via on the second).
// Without that, an empty answer says only that no other leg was found.
//
// # Bounds
//
// Every identifier is attacker-chosen, so the index is bounded: at most
// MaxKeysPerDialog values of each kind per dialog, at most MaxPostings
// dialogs per value, at most MaxKeys distinct values in all. Past a bound the
// value is refused and counted (Stats), never grown into.
//
// # Snapshots
//
// A Correlator reads the dialog store and keeps what it extracted between
// queries: on each query it re-reads only the dialogs whose message count
// moved since the last one (and forgets evicted dialogs), so a query over a
// loaded capture costs the lookups, not a scan of every message. One query
// answers from one snapshot.
package correlate
