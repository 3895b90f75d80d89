// Package dialog is the dialog store: every SIP message seen, grouped by
// Call-ID, run through a method-aware state machine, timed, and kept (up to a
// cap) for the tools that read it.
//
// # One entry per Call-ID, legs inside it
//
// The store holds one Dialog per Call-ID, so the dialog count and the set of
// Call-IDs agree with tshark's per-Call-ID view and with every tool that
// takes a Call-ID. Inside an entry, the tags say where separate dialogs share
// the Call-ID, and those are kept apart as legs:
//
//   - A leg is owned by the tag of the side that opened it (the From tag of
//     its first request). A message joins the leg whose owner tag is its From
//     tag or its To tag, so both directions of one dialog land in one leg.
//     A load generator that reuses a Call-ID for a REGISTER and an INVITE
//     with different From tags (sipp-branch-scenario.pcapng) yields two legs,
//     each with its own state machine.
//   - An out-of-dialog request that opens a different family (INVITE,
//     REGISTER, SUBSCRIBE) under a tag already owned by a leg of another
//     family opens its own leg.
//   - Forks (several To tags answering one INVITE through a forking proxy)
//     are recorded per leg with their own message counts and last status.
//   - The hops of a stateful proxy (sip-proxy.pcap: one dialog, the same
//     tags on both sides of the proxy) stay one leg; the hops are separate
//     transactions (top Via branch + CSeq), and retransmission identities
//     include the direction, so the second hop is never mistaken for a
//     retransmission.
//
// A list row (Summary) describes the Call-ID's primary leg, its call when
// it holds one (docs/data-model.md): the first INVITE-family leg, else the
// first leg, and a leg whose attempt ended without success (only
// challenged, refused, redirected, cancelled) yields to the next leg of its
// family (a retry under a new From tag). So a Call-ID that carries a
// REGISTER and then an INVITE (sipp-branch-scenario.pcapng, 1334 Call-IDs)
// lists as INVITE with the call's state and final code, and by_method,
// by_state, ASR/NER and every call count see the calls; the other legs stay
// on the row (OtherLegs: method, state, final code, challenges) and in
// Detail.Legs. The per-method counts and the first-message facts (Extra)
// follow the primary leg as it moves. msg_count counts every message of the
// Call-ID, retransmissions included; capture duplicates (one message seen
// twice at the capture point: a mirrored copy, a second interface, a second
// HEP agent) are counted apart and enter no dialog (dup.go,
// docs/retransmissions.md); created_at and the opening frame stay
// the Call-ID's first. final_status_code comes from the INVITE transactions
// that open or retry the call (never re-INVITEs) on the primary leg and the
// legs it retried: the first 2xx, else the last non-challenge final
// response, else the last challenge.
//
// Outcomes follow the last transaction: a 401/407 answered by a
// credentialed retry is counted (challenges), never the outcome; a REGISTER
// whose last transaction was refused reads Failed even after an earlier
// binding.
//
// # State machines
//
// Decide is one total table keyed (family, arrival, current state); every
// cell carries a reason, no-ops included. A response's arrival is named by
// its transaction (CSeq method), so 2xx to CANCEL never answers a call and
// 2xx to BYE ends one even when the BYE was not captured. A 401/407 is
// intermediate: the table leaves the state alone and the leg is marked
// challenged; when nothing but challenges followed, the leg reads Failed.
//
// # Concurrency
//
// One goroutine writes (Apply); any number read. Readers take the read lock,
// copy what they need and release it before rendering. Revision counts
// mutations, so an unchanged revision proves unchanged content.
package dialog
