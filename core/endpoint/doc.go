// Package endpoint answers questions about one participant rather than one
// call: who talks most (top_talkers), everything one address or user did
// (describe_endpoint), whether a phone registered and why not
// (diagnose_registration), whether a registrar rewrote a private Contact,
// and which SIP stack built an endpoint's requests (engine.md §11: Top
// talkers, Endpoint view, Private Contact, Stack fingerprint,
// registration_failure). It reads the dialog and stream stores and knows
// nothing of MCP: it returns raw values (banner text, codec names and
// Call-IDs unfenced) and the bundles fence them.
//
// Every table keyed by what a sender wrote (a User-Agent, a dialed number)
// is capped in entries ([MaxKeys]) and each key in bytes ([MaxKeyBytes]);
// what did not fit is counted and reported, never dropped silently.
package endpoint
