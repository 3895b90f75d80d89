package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// WriteVerb is one row of the write-verb table: a tool that is not read-only
// and its two remaining hints.
type WriteVerb struct {
	Destructive bool
	Idempotent  bool
}

// RegistryOptions tune [Register].
type RegistryOptions struct {
	// WriteVerbs is the write-verb table (docs/mcp-protocol.md, parsed with
	// [ParseWriteVerbs]). When set, a registered tool is non-read-only
	// exactly when it is in the table, with the table's hints; rows naming
	// tools of bundles not compiled in are ignored. Nil skips the check
	// (the binary does not carry the docs; tests pass the table).
	WriteVerbs map[string]WriteVerb
	// SkipBudgets skips the byte-budget check (used only to measure).
	SkipBudgets bool
	// Suggest returns the candidate closest to a misspelt word, or "": an
	// unknown argument's refusal names it ("did you mean"). The host passes
	// core/filter's; nil suggests nothing.
	Suggest func(word string, candidates []string) string
}

// Registered is one provisioned bundle.
type Registered struct {
	// Info is the bundle's static description.
	Info Info
	// Tools in deterministic (name) order.
	Tools []Tool
	// Prompts the bundle offers (PromptBundle), in name order.
	Prompts []Prompt
	// Resources and Templates the bundle registered through its Env.
	Resources []Resource
	Templates []ResourceTemplate
}

// Bytes is the bundle's compact tools/list bytes, summed over its tools.
func (r Registered) Bytes(outputSchemas bool) int {
	n := 0
	for _, t := range r.Tools {
		n += t.WireBytes(outputSchemas)
	}
	return n
}

// Registry holds the provisioned bundles in the order given.
type Registry struct {
	bundles []Registered
	byName  map[string]int
}

// Bundles returns the bundles in registration order.
func (r *Registry) Bundles() []Registered { return r.bundles }

// Tool looks a tool up by name and returns it with its bundle's ID.
func (r *Registry) Tool(name string) (Tool, string, bool) {
	i, ok := r.byName[name]
	if !ok {
		return Tool{}, "", false
	}
	for _, t := range r.bundles[i].Tools {
		if t.Name == name {
			return t, r.bundles[i].Info.ID, true
		}
	}
	return Tool{}, "", false
}

// Names returns every tool name, bundle by bundle.
func (r *Registry) Names() []string {
	var out []string
	for _, b := range r.bundles {
		for _, t := range b.Tools {
			out = append(out, t.Name)
		}
	}
	return out
}

// Register provisions every bundle and checks the tool surface. It never
// panics and returns every violation joined, each prefixed
// `sdk: bundle "x": tool "y": `. env builds each bundle's Env.
func Register(ctx context.Context, bundles []Bundle, env func(Info) Env, opts RegistryOptions) (*Registry, error) {
	reg := &Registry{byName: map[string]int{}}
	var errs []error
	seenBundle := map[string]bool{}
	owner := map[string]string{}
	seenURI := map[string]string{}
	for _, b := range bundles {
		if b == nil {
			errs = append(errs, errors.New("sdk: nil bundle in the bundle list"))
			continue
		}
		info, err := safeInfo(b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bp := fmt.Sprintf("sdk: bundle %q: ", info.ID)
		if !nameRE.MatchString(info.ID) {
			errs = append(errs, fmt.Errorf("%sbundle id must match %s", bp, nameRE))
		}
		if seenBundle[info.ID] {
			errs = append(errs, fmt.Errorf("%sduplicate bundle id", bp))
			continue
		}
		seenBundle[info.ID] = true
		if info.Summary == "" {
			errs = append(errs, fmt.Errorf("%sInfo.Summary is empty", bp))
		}
		var e Env
		if env != nil {
			e = env(info)
		} else {
			e = NewEnv(EnvOptions{})
		}
		tools, err := safeProvision(ctx, b, e)
		if err != nil {
			errs = append(errs, fmt.Errorf("%sprovisioning: %w", bp, err))
			continue
		}
		sort.SliceStable(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
		for i := range tools {
			tools[i].suggest = opts.Suggest
		}
		for _, t := range tools {
			for _, v := range CheckTool(t, opts.WriteVerbs) {
				errs = append(errs, fmt.Errorf("%stool %q: %s", bp, t.Name, v))
			}
			if prev, dup := owner[t.Name]; dup {
				errs = append(errs, fmt.Errorf("%stool %q: name already registered by bundle %q", bp, t.Name, prev))
				continue
			}
			if seenBundle[t.Name] || t.Name == "full" {
				errs = append(errs, fmt.Errorf("%stool %q: a tool may not share its name with a bundle or \"full\"", bp, t.Name))
			}
			owner[t.Name] = info.ID
			reg.byName[t.Name] = len(reg.bundles)
		}
		r := Registered{Info: info, Tools: tools}
		if e.res != nil {
			errs = append(errs, checkResources(bp, e.res, seenURI, info.ID)...)
			r.Resources, r.Templates = e.res.fixed, e.res.templates
		}
		if pb, ok := b.(PromptBundle); ok {
			r.Prompts = append(r.Prompts, pb.Prompts()...)
			sort.SliceStable(r.Prompts, func(i, j int) bool { return r.Prompts[i].Name < r.Prompts[j].Name })
		}
		if !opts.SkipBudgets {
			errs = append(errs, checkBudget(bp, r)...)
		}
		reg.bundles = append(reg.bundles, r)
	}
	for id := range seenBundle {
		if _, clash := owner[id]; clash {
			errs = append(errs, fmt.Errorf("sdk: bundle %q: a bundle may not share its name with a tool", id))
		}
	}
	return reg, errors.Join(errs...)
}

// BudgetError is a bundle whose tools/list bytes exceed its recorded
// budget (or that records none). Tests treat it as fatal; a host may choose
// to only warn, since it costs context, not correctness.
type BudgetError struct{ msg string }

func (e *BudgetError) Error() string { return e.msg }

func budgetErrorf(format string, a ...any) error { return &BudgetError{msg: fmt.Sprintf(format, a...)} }

// SplitBudgetErrors separates the budget violations of a Register error
// from every other violation (nil when there is none).
func SplitBudgetErrors(err error) (budget []error, other error) {
	if err == nil {
		return nil, nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var rest []error
	for _, e := range list {
		var be *BudgetError
		if errors.As(e, &be) {
			budget = append(budget, e)
		} else {
			rest = append(rest, e)
		}
	}
	return budget, errors.Join(rest...)
}

func checkBudget(prefix string, r Registered) []error {
	var errs []error
	if r.Info.ByteBudget.Default <= 0 || r.Info.ByteBudget.WithOutputSchemas <= 0 {
		return []error{budgetErrorf("%sno byte budget recorded (Info.ByteBudget); measured %d bytes, %d with output schemas",
			prefix, r.Bytes(false), r.Bytes(true))}
	}
	if n := r.Bytes(false); n > r.Info.ByteBudget.Default {
		errs = append(errs, budgetErrorf("%stools/list is %d bytes, over its budget of %d; trim descriptions or raise the budget and docs/mcp-tools.md together",
			prefix, n, r.Info.ByteBudget.Default))
	}
	if n := r.Bytes(true); n > r.Info.ByteBudget.WithOutputSchemas {
		errs = append(errs, budgetErrorf("%stools/list with output schemas is %d bytes, over its budget of %d",
			prefix, n, r.Info.ByteBudget.WithOutputSchemas))
	}
	return errs
}

func safeInfo(b Bundle) (info Info, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sdk: bundle %T: Info panicked: %v", b, r)
		}
	}()
	return b.Info(), nil
}

func safeProvision(ctx context.Context, b Bundle, e Env) (tools []Tool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("provision panicked: %v", r)
		}
	}()
	return b.Provision(ctx, e)
}

// CheckTool returns every rule a tool breaks, without prefixes: name syntax,
// annotations, the write-verb table (when given), schemas generated without
// error, no type unions in the input schema, every input property described.
func CheckTool(t Tool, writeVerbs map[string]WriteVerb) []string {
	var v []string
	if !nameRE.MatchString(t.Name) {
		v = append(v, fmt.Sprintf("name must match %s", nameRE))
	}
	if t.Description == "" {
		v = append(v, "description is empty")
	}
	if t.invoke == nil {
		v = append(v, "no handler (build tools with sdk.NewTool)")
	}
	v = append(v, t.Annotations.check()...)
	if writeVerbs != nil && t.Annotations.Effect != EffectUnset {
		wv, listed := writeVerbs[t.Name]
		h := t.Annotations.Hints()
		switch {
		case listed && t.Annotations.readOnly():
			v = append(v, "is read-only but the write-verb table in docs/mcp-protocol.md lists it")
		case !listed && !t.Annotations.readOnly():
			v = append(v, "is not read-only but is missing from the write-verb table in docs/mcp-protocol.md")
		case listed && (*h.DestructiveHint != wv.Destructive || *h.IdempotentHint != wv.Idempotent):
			v = append(v, fmt.Sprintf("hints destructive=%t idempotent=%t disagree with the write-verb table (destructive=%t idempotent=%t)",
				*h.DestructiveHint, *h.IdempotentHint, wv.Destructive, wv.Idempotent))
		}
	}
	if t.schemaErr != nil {
		v = append(v, strings.Split(t.schemaErr.Error(), "\n")...)
	}
	for i, ex := range t.Examples {
		if strings.TrimSpace(ex.Title) == "" {
			v = append(v, fmt.Sprintf("example %d: no title", i+1))
		}
		if t.input == nil {
			continue
		}
		args, err := json.Marshal(ex.Args)
		if err == nil {
			err = ValidateArgs(t.input, args)
		}
		if err != nil {
			v = append(v, fmt.Sprintf("example %d (%s): arguments fail the input schema: %v", i+1, ex.Title, err))
		}
	}
	if t.input != nil {
		walk(t.input, "", func(path string, s *Schema) {
			if len(s.Type) > 1 {
				v = append(v, fmt.Sprintf("input schema %s: type union %q (a strict client may refuse it; make the field optional or not nullable)",
					orRoot(path), s.Type))
			}
			for _, p := range s.Properties {
				if strings.TrimSpace(p.Schema.Description) == "" {
					v = append(v, fmt.Sprintf("input schema %s/properties/%s: no description (add a desc tag)", orRoot(path), p.Name))
				}
			}
		})
	}
	return v
}

func orRoot(p string) string {
	if p == "" {
		return "#"
	}
	return "#" + p
}

// WriteVerbsBegin and WriteVerbsEnd delimit the write-verb table in
// docs/mcp-protocol.md.
const (
	WriteVerbsBegin = "<!-- write-verbs:begin -->"
	WriteVerbsEnd   = "<!-- write-verbs:end -->"
)

// ParseWriteVerbs reads the write-verb table between WriteVerbsBegin and
// WriteVerbsEnd: a Markdown table whose first column is the tool name (in
// backticks or bare) and which has destructiveHint and idempotentHint columns
// holding true or false.
func ParseWriteVerbs(doc []byte) (map[string]WriteVerb, error) {
	s := string(doc)
	i := strings.Index(s, WriteVerbsBegin)
	j := strings.Index(s, WriteVerbsEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("write-verb table markers %s ... %s not found", WriteVerbsBegin, WriteVerbsEnd)
	}
	var header []string
	out := map[string]WriteVerb{}
	for _, line := range strings.Split(s[i+len(WriteVerbsBegin):j], "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for k := range cells {
			cells[k] = strings.Trim(strings.TrimSpace(cells[k]), "`")
		}
		if header == nil {
			header = cells
			continue
		}
		if strings.HasPrefix(cells[0], "---") || strings.HasPrefix(cells[0], ":--") {
			continue
		}
		row := map[string]string{}
		for k, h := range header {
			if k < len(cells) {
				row[h] = cells[k]
			}
		}
		d, err1 := parseBool(row["destructiveHint"])
		id, err2 := parseBool(row["idempotentHint"])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("write-verb table row %q: %w", cells[0], err)
		}
		if _, dup := out[cells[0]]; dup {
			return nil, fmt.Errorf("write-verb table lists %q twice", cells[0])
		}
		out[cells[0]] = WriteVerb{Destructive: d, Idempotent: id}
	}
	if header == nil {
		return nil, errors.New("write-verb table is empty")
	}
	return out, nil
}

func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("want true or false, got %q", s)
}
