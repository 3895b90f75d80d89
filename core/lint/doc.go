// Package lint is the SIP/SDP conformance linter: a catalogue of 43 rules,
// each citing one RFC section, evaluated over a dialog's messages and the RTP
// the stream store attributed to it.
//
// # Rules
//
// A rule id reads FAMILY-RFC-SECTION-SLUG. The family says what the rule
// reads: SIP rules read SIP messages, SDP rules read offers against answers,
// OBS rules read the SDP declarations against the RTP observed on the wire,
// which only a tool holding signaling and media together can do. The scope
// follows from the id: OBS- rules are media rules, SDP- rules and three SIP
// rules (TO-TAG-IN-INITIAL-REQUEST, ACK-CSEQ-MISMATCH, PRACK-MISSING) are
// dialog rules, every other rule reads one message alone.
//
// Severity (error, warning, notice, info) says how much attention a finding
// deserves; basis (must, should, interop, observation) says what kind of
// claim it makes. The two axes are separate so a broken MUST never hides
// among vendor-compatibility hints.
//
// # Evaluation
//
// [Lint] runs the selected rules over a dialog. Every selected rule that can
// run does run: suppression, the severity floor and the per-rule cap decide
// what is reported, never what is evaluated, so the suppressed and
// below-severity counts are exact. At most [DefaultCap] findings per rule per
// dialog are reported; the capped count is documented as a lower bound.
// Rules that could not run are listed by reason ([NotEvaluated]): a rule that
// found nothing and a rule that never ran must not read the same.
//
// # Thresholds
//
// Duration comparisons are one-sided: silence suppression, comfort noise and
// a congested path stretch the gaps between packets, nothing compresses them,
// so a rule fires only when the wire carries more media per packet than the
// declaration allows. Packetization is derived from the payload size where
// the codec has a fixed octet rate (PCMU, PCMA, G722: 8 octets per ms; G729:
// 1; GSM: 1.65), and from RTP timestamps otherwise.
package lint
