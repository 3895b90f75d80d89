package query

import (
	"runtime"
	"sync"
	"weak"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// caches holds one sorted-row cache per dialog store, so every tool (and
// every bundle) reading one capture shares one snapshot instead of building
// and holding its own. A cache holds no reference to its store; its entry
// goes when the store is collected.
var caches sync.Map // weak.Pointer[dialog.Store] -> *snapCache

// For returns a Querier like New whose sorted-row cache is shared with
// every other Querier For returns over the same dialog store, whatever
// their stream store or thresholds (the cache holds rows only).
func For(dialogs *dialog.Store, m analysis.MediaSource, th filter.Thresholds) *Querier {
	key := weak.Make(dialogs)
	v, ok := caches.Load(key)
	if !ok {
		var loaded bool
		v, loaded = caches.LoadOrStore(key, &snapCache{})
		if !loaded {
			runtime.AddCleanup(dialogs, func(k weak.Pointer[dialog.Store]) { caches.Delete(k) }, key)
		}
	}
	return &Querier{dialogs: dialogs, media: m, th: th, cache: v.(*snapCache)}
}
