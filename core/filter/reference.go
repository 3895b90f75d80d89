package filter

import (
	"strconv"
	"strings"
)

// Reference returns the language reference as Markdown, with every alias
// expanded for th (this run's thresholds). It is built from the same tables
// Compile uses, so it cannot drift from the compiler; a reference resource
// or a documentation page can serve it as is.
func Reference(th Thresholds) string {
	var b strings.Builder
	b.WriteString(`# Filter language

One language selects dialogs for every tool that takes a filter.

## Grammar

    expr       := or
    or         := and ( OR and )*
    and        := not ( AND not )*
    not        := NOT not | atom
    atom       := comparison | "(" expr ")" | alias
    comparison := field op value

Keywords ` + "`and`, `or`, `not`" + ` are case-insensitive; NOT binds tighter than AND, AND tighter than OR.
Field and alias names are lowercase. Example: ` + "`problems and method == INVITE and not src.ip == 10.0.0.1`" + `.

## Operators

` + "`==` `!=` `<` `>` `<=` `>=`" + ` compare strings (byte order) and numbers; ` + "`=~`" + ` matches a Go RE2 regular
expression anywhere in a string field (` + "`(?i)`" + ` for case-insensitive, at most ` + strconv.Itoa(MaxRegexBytes) + ` bytes).
Boolean fields take ` + "`==` and `!=`" + ` only. Numbers are equal within a relative tolerance of 1e-9.

## Values

Bare or quoted. A bare value is any run of characters except whitespace, control characters,
` + "`( ) \" ' = ! < >`" + `; it may not be the word and, or or not. So ` + "`alice`, `10.0.0.1`, `abc@host`, `^sip:.*`" + ` are bare.
Quote anything else with " or '; inside, a backslash escapes only that quote (` + "`\"say \\\"hi\\\"\"`" + `) and
is otherwise kept, so ` + "`'\\d+'`" + ` is the regular expression \d+. Numbers are decimal without units
(` + "`pdd > 2.5`" + `, not ` + "`2.5s`" + `). Booleans are true or false. ` + "`state`" + ` takes one of the states below (case-sensitive);
` + "`src.ip`/`dst.ip`" + ` an IP address (compared as addresses); ` + "`rtp.ssrc`" + ` 0x and up to 8 hex digits, or a decimal number.

## Absent values

A value that was not measured (no PDD, no media, no final response) is absent, not zero. Every comparison on an
absent value is false except ` + "`!=`" + `, which is true: ` + "`a != v`" + ` is exactly ` + "`not a == v`" + `.
` + "`payload`, `rtp.codec` and `rtp.ssrc`" + ` hold several values and match when any value matches.

## Fields

| Field | Type | Unit | Meaning |
|---|---|---|---|
`)
	for _, f := range Fields() {
		typ := f.Type.String()
		if f.Multi {
			typ += " (any of several)"
		}
		b.WriteString("| `" + f.Name + "` | " + typ + " | " + f.Unit + " | " + f.Doc + " |\n")
	}
	b.WriteString("\nStates: " + strings.Join(states, ", ") + ".\n")
	b.WriteString(`
## Aliases

An alias is a whole filter or a term inside one. Expansions use this run's thresholds.

| Alias | Expands to | Selects |
|---|---|---|
`)
	for _, a := range aliasTable {
		exp, _ := ExpandAlias(a.Name, th)
		b.WriteString("| `" + a.Name + "` | `" + exp + "` | " + a.Doc + " |\n")
	}
	b.WriteString(`
## Limits

Parentheses nest at most ` + strconv.Itoa(MaxDepth) + ` deep; an expression is at most ` + strconv.Itoa(MaxExprBytes) + ` bytes; the regular
expressions of one filter together compile to at most ` + strconv.Itoa(MaxRegexInsts) + ` instructions (about one per literal
character, counted repetitions such as ` + "`{100}`" + ` expanded).
An error names the byte position (from 0), shows a caret under it and suggests a fix.
`)
	return b.String()
}
