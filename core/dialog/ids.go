package dialog

import (
	"hash/maphash"
	"iter"
)

// The store finds a dialog by its Call-ID through two 64-bit hashes of the
// Call-ID, each under its own seed (random per process), instead of by the
// string: a map keyed by a string compares the key it finds with the one
// it looks for, and the held key points into the dialog's first message,
// bytes nothing else reads since then (a cache miss per message on a large
// capture); growing the map rehashed those bytes again. Two Call-IDs are
// taken for one only if both hashes agree: for random inputs 2^-128 per
// pair (about 10^-29 for a store of 100,000 dialogs), and a sender cannot
// aim at it without the seeds. The order of the map is never read (every
// listing sorts or walks the LRU list), so the seeds change no answer.
// The map holds the dialog under its first hash; the second is kept in
// the dialog (idB), next to the fields Apply reads first, so an entry is
// 16 bytes instead of 24 and checking it reads no line Apply would not.

// idSeedA and idSeedB key the two hashes of a Call-ID.
var idSeedA, idSeedB = maphash.MakeSeed(), maphash.MakeSeed()

// idKey is a Call-ID as the store keys it.
type idKey struct{ a, b uint64 }

func keyOf(callID string) idKey {
	return idKey{maphash.String(idSeedA, callID), maphash.String(idSeedB, callID)}
}

// keyOfBytes is keyOf of a Call-ID still in bytes (the same key).
func keyOfBytes(callID []byte) idKey {
	return idKey{maphash.Bytes(idSeedA, callID), maphash.Bytes(idSeedB, callID)}
}

// callIDs is the store's index of held dialogs: by the first hash, and the
// rare key whose first hash another held key has already taken in a map of
// its own (so a collision of the first hash merges nothing).
type callIDs struct {
	m    map[uint64]*dialog // by the first hash; the dialog holds the second
	more map[idKey]*dialog
}

func (c *callIDs) get(k idKey) *dialog {
	if d := c.m[k.a]; d != nil && d.idB == k.b {
		return d
	}
	if len(c.more) > 0 {
		return c.more[k]
	}
	return nil
}

// put adds d under k; k must not be held.
func (c *callIDs) put(k idKey, d *dialog) {
	if c.m == nil {
		c.m = map[uint64]*dialog{}
	}
	d.idB = k.b
	if _, taken := c.m[k.a]; !taken {
		c.m[k.a] = d
		return
	}
	if c.more == nil {
		c.more = map[idKey]*dialog{}
	}
	c.more[k] = d
}

func (c *callIDs) del(k idKey) {
	if d := c.m[k.a]; d != nil && d.idB == k.b {
		delete(c.m, k.a)
		return
	}
	delete(c.more, k)
}

func (c *callIDs) len() int { return len(c.m) + len(c.more) }

// all yields every held dialog, in no particular order.
func (c *callIDs) all() iter.Seq[*dialog] {
	return func(yield func(*dialog) bool) {
		for _, d := range c.m {
			if !yield(d) {
				return
			}
		}
		for _, d := range c.more {
			if !yield(d) {
				return
			}
		}
	}
}

// lookup returns the held dialog of callID; nil when none.
func (s *Store) lookup(callID string) *dialog { return s.byID.get(keyOf(callID)) }
