// Package filter is sipnab's filter language: one compiler used by every
// tool that selects dialogs (list_dialogs, find_problems, aggregate_dialogs,
// group_dialogs, top_talkers, search_by_time, await_condition,
// find_in_captures, export_vcon, validate_filter, evaluate_expectations'
// scope and the sipnab://filter/ resource). A second parser would drift: an
// expression validate_filter accepts must be one every tool accepts.
//
// # Grammar
//
//	expr       := or
//	or         := and ( OR and )*
//	and        := not ( AND not )*
//	not        := NOT not | atom
//	atom       := comparison | "(" expr ")" | alias
//	comparison := field op value
//	op         := "==" | "!=" | "<" | ">" | "<=" | ">=" | "=~"
//
// The keywords and, or, not are case-insensitive; NOT binds tighter than
// AND, which binds tighter than OR. Field and alias names are lowercase and
// exact. Whitespace (space, tab, CR, LF, VT, FF) separates tokens and is
// needed only where two words would otherwise run together:
// from.user==alice is one comparison, (a == 1)and(b == 2) two.
//
// # Values
//
// A value is bare or quoted.
//
// A bare value is a run of one or more bytes, none of which is whitespace, a
// control character (0x00-0x1F, 0x7F), a parenthesis ( ), a quote " ', or
// one of the operator characters = ! < >. Everything else may appear:
// letters, digits, non-ASCII text, and . _ - + @ : / * ? [ ] { } ^ $ | \ # %
// & , ; ~ `. So alice, 10.0.0.1, 2001:db8::1, abc@host, 0x1a2b3c4d, -2.5,
// ^sip:.*@example\.com$ are bare values. A bare value may not be one of the
// keywords and, or, not (quote it: "not"). A bare backslash is literal.
//
// A quoted value is enclosed in double or single quotes and may contain
// anything, including spaces, parentheses, the other quote and operator
// characters. Inside, a backslash escapes only the quote character that
// opened the value: "say \"hi\"" is say "hi", while "\d+" is \d+ (the
// backslash is kept, so regular expressions need no doubling). Hence a
// quoted value cannot end with a backslash; write such a value bare.
//
// How a value is read depends on the field, not on how it was written:
//
//   - string fields take the value as text; 123 and "123" are the same.
//   - number fields take a decimal number: optional sign, digits with an
//     optional fraction, optional exponent (3, -0.5, .5, 1e3). No units, no
//     hex, no inf/nan. A quoted number is accepted.
//   - boolean fields take true or false (any case, bare or quoted).
//   - state takes one of the 13 states, case-sensitive: Trying, Ringing,
//     InCall, Completed, Cancelled, Failed, Redirected, Registered, Expired,
//     Pending, Active, Terminated, Transferring. Any other value is an
//     error with a hint (state == failed suggests Failed).
//   - src.ip and dst.ip take an IP address (IPv4 or IPv6) and compare as
//     addresses, so 2001:DB8::1 equals 2001:db8::1 and < / > order
//     addresses numerically (a range: src.ip >= 10.0.0.0 and src.ip <=
//     10.255.255.255). Anything else is an error.
//   - rtp.ssrc takes 0x followed by up to 8 hex digits in any case, or a
//     decimal number up to 4294967295, and compares numerically.
//   - =~ always takes a regular expression, whatever the field (string
//     fields only).
//
// # Operators
//
// == != < > <= >= apply to strings (byte-wise order) and numbers. =~
// applies to string fields only: the value is a Go RE2 regular expression
// (at most MaxRegexBytes, compiled once at Compile), matched anywhere in the
// text unless anchored with ^ and $; (?i) makes it case-insensitive.
// Booleans take == and != only. Number equality has a tolerance: a == b
// when |a-b| <= Epsilon*max(1,|a|,|b|); < and > exclude equal values and <=
// and >= include them, by the same tolerance.
//
// # Absent values
//
// A field can be absent from a dialog: no PDD measured, no media, no
// User-Agent. Absent is not zero and not false. A comparison on an absent
// value is false for every operator except !=, which is true. In general
// a != v is exactly not (a == v), for every field. So pdd < 5 does not match
// a dialog whose PDD was never measured, and pdd != 5 does.
//
// # Multi-valued fields
//
// payload (the text of each SIP message of the dialog), rtp.codec and
// rtp.ssrc (each stream linked to the dialog) hold several values. A
// comparison matches when any value matches: payload =~ "Reason: Q.850"
// finds dialogs with at least one such message. != is the negation of ==:
// rtp.codec != PCMU means no linked stream is PCMU (and holds for a dialog
// with no streams).
//
// # Aliases
//
// Ten names stand for whole expressions: problems, slow-setup, short-calls,
// one-way, nat-issues, codec-asym, ptime-asym, payload-asym,
// duration-asym, late-media. An alias may be the whole filter or appear
// inside one (problems and method == INVITE, not one-way). Its expansion
// uses the run's Thresholds and is defined in one place, ExpandAlias.
//
// # Limits and errors
//
// Parentheses nest at most MaxDepth (50) deep; an expression is at most
// MaxExprBytes long; a regular expression at most MaxRegexBytes, and the
// regular expressions of one filter together compile to at most
// MaxRegexInsts instructions (about one per literal character, counted
// repetitions expanded), so that no filter costs seconds or hundreds of
// megabytes to compile or makes every match slow. Unknown
// fields, aliases, states and operators are errors. Every error is an *Error
// with the byte position, the parser's message, a caret line and a hint.
// Compile and Match never panic.
//
// # Records
//
// A Filter matches a Record, an interface the dialog store implements with a
// small adapter; field ids are small integers and Match allocates nothing.
// See Record for the contract.
package filter
