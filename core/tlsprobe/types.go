package tlsprobe

// MaxCopy is how many bytes of one write or read call a probe copies: one
// TLS record's largest plaintext (RFC 8446 §5.1). A longer call's rest is
// counted as a gap, never guessed.
const MaxCopy = 16384

// Direction of a call.
const (
	DirWrite = 0
	DirRead  = 1
)

// Target is one library to probe: the path to open from this mount
// namespace and its symbols (the _ex ones empty when the library has
// none).
type Target struct {
	Path                        string
	WriteSymbol, ReadSymbol     string
	WriteExSymbol, ReadExSymbol string
}

// Record is one call read from the ring buffer. Data is owned by the
// receiver.
type Record struct {
	PID, TID  uint32
	SSL       uint64
	Len       uint32 // bytes the call wrote or read
	Dir       int    // DirWrite or DirRead
	Data      []byte // the first min(Len, MaxCopy) bytes; nil when unreadable
	Truncated bool   // Len > len(Data)
}
