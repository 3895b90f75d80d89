package filter

// Record is the thing a Filter is matched against: one dialog, seen through
// whatever store holds it. The filter never imports the store; the store
// provides a small adapter.
//
// Contract (the adapter must follow it; Match relies on nothing else):
//
//   - Field ids are small integers (1..NumFields); an adapter typically
//     switches on them. Match calls exactly one method per comparison:
//     Str for a single-valued string field, Num for a number field, Bool
//     for a boolean field and Each for a multi-valued field (payload,
//     rtp.codec, rtp.ssrc; see Field.Multi). It never calls a method with a
//     field of another type.
//   - The second result (or Each's zero calls) says whether the value is
//     present. Absent is not zero and not false: return ok=false for a value
//     that was not measured (no PDD, no media, no User-Agent) rather than 0,
//     "" or false. A NaN number is treated as absent.
//   - Each calls fn with every value of the field, in any order, and stops as
//     soon as fn returns true; it reports whether fn returned true. With no
//     values it returns false without calling fn. fn must not be retained.
//   - rtp.ssrc values are "0x" followed by lowercase hex, zero-padded to 8
//     digits (fmt "0x%08x"); src.ip and dst.ip are the address's canonical
//     text (netip.Addr.String). payload is each message's raw text; an
//     adapter holding []byte may pass an unsafe.String view of bytes it
//     never mutates, so that evaluation does not copy.
//   - Methods must be safe to call while the adapter's caller holds the
//     store's read lock, must not block, and should not allocate: Match
//     itself allocates nothing.
//
// A Filter is immutable after Compile; any number of goroutines may call
// Match concurrently, each with its own Record.
type Record interface {
	Str(f Field) (string, bool)
	Num(f Field) (float64, bool)
	Bool(f Field) (bool, bool)
	Each(f Field, fn func(v string) bool) bool
}

// MemRecord is a Record held in memory: values are set field by field, and
// a field never set is absent. It serves tests, examples and small adapters
// (for instance a stream-only record). The zero MemRecord is an empty record
// with every field absent.
type MemRecord struct {
	set   [fieldEnd]bool
	str   [fieldEnd]string
	num   [fieldEnd]float64
	bools [fieldEnd]bool
	multi [fieldEnd][]string
}

var _ Record = (*MemRecord)(nil)

// SetStr sets a single-valued string field. Setting a field of another
// type, or a multi-valued field, is ignored.
func (m *MemRecord) SetStr(f Field, v string) *MemRecord {
	if f.Type() == TypeString && !f.Multi() {
		m.set[f], m.str[f] = true, v
	}
	return m
}

// SetNum sets a number field (other fields are ignored).
func (m *MemRecord) SetNum(f Field, v float64) *MemRecord {
	if f.Type() == TypeNumber {
		m.set[f], m.num[f] = true, v
	}
	return m
}

// SetBool sets a boolean field (other fields are ignored).
func (m *MemRecord) SetBool(f Field, v bool) *MemRecord {
	if f.Type() == TypeBool {
		m.set[f], m.bools[f] = true, v
	}
	return m
}

// Add appends a value to a multi-valued field (other fields are ignored).
func (m *MemRecord) Add(f Field, v ...string) *MemRecord {
	if f.Multi() {
		m.multi[f] = append(m.multi[f], v...)
	}
	return m
}

// Unset makes a field absent again.
func (m *MemRecord) Unset(f Field) *MemRecord {
	if f.Valid() {
		m.set[f] = false
		m.multi[f] = nil
	}
	return m
}

// Str implements Record.
func (m *MemRecord) Str(f Field) (string, bool) {
	if !f.Valid() || !m.set[f] {
		return "", false
	}
	return m.str[f], true
}

// Num implements Record.
func (m *MemRecord) Num(f Field) (float64, bool) {
	if !f.Valid() || !m.set[f] {
		return 0, false
	}
	return m.num[f], true
}

// Bool implements Record.
func (m *MemRecord) Bool(f Field) (bool, bool) {
	if !f.Valid() || !m.set[f] {
		return false, false
	}
	return m.bools[f], true
}

// Each implements Record.
func (m *MemRecord) Each(f Field, fn func(string) bool) bool {
	if !f.Valid() {
		return false
	}
	for _, v := range m.multi[f] {
		if fn(v) {
			return true
		}
	}
	return false
}
