package server

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/sdk"
)

const hepSendersSchemaVersion = 1

type hepSendersIn struct {
	Limit int `json:"limit,omitempty" default:"50" desc:"senders and refused sources per page; 0 means 50, clamped to --mcp-max-rows"`
}

// HEPSenders is the answer of hep_senders: who sends HEP to the -L
// listeners, who went silent, who was refused. The roster and the
// refused-source list are capped (4096 and 256, least recently seen
// forgotten first, counted).
type HEPSenders struct {
	SchemaVersion int      `json:"schema_version" desc:"version of this answer's shape"`
	Listening     bool     `json:"listening" desc:"a HEP listener (-L) runs"`
	Note          string   `json:"note,omitempty" desc:"why there is nothing to list"`
	Listeners     []string `json:"listeners" nonnull:"true" desc:"listener names, hep:<address>"`
	// Trust is what admits a sender: allowlist (--hep-allow) or loopback
	// (no allowlist: loopback binds only); mixed listeners list both.
	Trust                   []string          `json:"trust" nonnull:"true" desc:"what admits a sender: allowlist (--hep-allow) or loopback"`
	SilenceThresholdSeconds int               `json:"silence_threshold_seconds" desc:"--hep-silence-warn: unheard this long = silent"`
	PacketsReceived         uint64            `json:"packets_received" desc:"datagrams and TCP messages received"`
	PacketsAdmitted         uint64            `json:"packets_admitted" desc:"admitted to the capture"`
	PacketsRefused          uint64            `json:"packets_refused" desc:"refused, every reason"`
	RefusedByReason         map[string]uint64 `json:"refused_by_reason" nonnull:"true" desc:"refusals: not_allowed, global_rate, rate_limited, malformed, hep2_on_tcp, auth_failed, too_many_conns"`
	KernelDropped           *uint64           `json:"kernel_dropped,omitempty" desc:"dropped by the kernel at a full receive buffer (Linux)"`
	SendersTracked          int               `json:"senders_tracked" desc:"senders in the roster"`
	SendersCap              int               `json:"senders_cap" desc:"roster cap (4096 per listener)"`
	SendersEvicted          uint64            `json:"senders_evicted" desc:"senders forgotten at the cap"`
	Silent                  int               `json:"silent" desc:"tracked senders silent past the threshold"`
	// UntrackedPackets are admitted packets of senders the roster forgot.
	UntrackedPackets      uint64             `json:"untracked_packets" desc:"admitted packets of senders forgotten at the cap"`
	Senders               []HEPSender        `json:"senders" nonnull:"true" desc:"senders, silent longest first, then busiest"`
	Returned              int                `json:"returned" desc:"senders in this answer"`
	Truncated             bool               `json:"truncated" desc:"more senders than limit"`
	RefusedSources        []RefusedHEPSource `json:"refused_sources" nonnull:"true" desc:"refused sources, most recent first, at most limit"`
	RefusedSourcesCap     int                `json:"refused_sources_cap" desc:"refused-source list cap (256 per listener)"`
	RefusedSourcesEvicted uint64             `json:"refused_sources_evicted" desc:"refused sources forgotten at the cap"`
}

// HEPSender is one admitted source.
type HEPSender struct {
	// Source is hep:<capture id>@<address>, or hep:<address> when the
	// sender claims no id.
	Source    string  `json:"source" desc:"hep:<capture id>@<address> (hep:<address> without an id)"`
	CaptureID *uint32 `json:"capture_id,omitempty" desc:"capture agent id it claims (chunk 0x000c)"`
	Peer      string  `json:"peer" desc:"source address"`
	// Identity: the capture id is what the sender wrote, not verified.
	Identity    string    `json:"identity" enum:"claimed_by_sender" desc:"the id is the sender's claim, unverified"`
	Trust       string    `json:"trust" desc:"what admitted it: allowlist or loopback"`
	Listener    string    `json:"listener" desc:"listener that received it"`
	Packets     uint64    `json:"packets" desc:"packets admitted"`
	Bytes       uint64    `json:"bytes" desc:"their bytes"`
	FirstSeen   time.Time `json:"first_seen" desc:"first packet"`
	LastSeen    time.Time `json:"last_seen" desc:"last packet"`
	IdleSeconds float64   `json:"idle_seconds" desc:"seconds since last_seen"`
	Silent      bool      `json:"silent" desc:"idle past the threshold"`
}

// RefusedHEPSource is one refused source.
type RefusedHEPSource struct {
	Peer      string            `json:"peer" desc:"source address"`
	Listener  string            `json:"listener" desc:"listener that refused it"`
	Count     uint64            `json:"count" desc:"refusals"`
	Reasons   map[string]uint64 `json:"reasons" desc:"refusals by reason"`
	FirstSeen time.Time         `json:"first_seen" desc:"first refusal"`
	LastSeen  time.Time         `json:"last_seen" desc:"last refusal"`
}

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "hep_senders",
		Title: "HEP senders",
		Description: "Who sends HEP to the -L listeners and who went silent (--hep-silence-warn): per sender capture id (claimed), " +
			"packets, last seen; refusals by reason and refused sources. listening: false without a listener.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples:    []sdk.Example{{Title: "The HEP roster", Args: map[string]any{"limit": 20}}},
	}, func(ctx context.Context, c *sdk.Call, in hepSendersIn) (HEPSenders, error) {
		return hepSenders(d.capture.HEPListeners(), c.Limit(in.Limit)), nil
	})
})

func hepSenders(ls []*heplisten.Listener, limit int) HEPSenders {
	out := HEPSenders{SchemaVersion: hepSendersSchemaVersion, Listeners: []string{}, Trust: []string{},
		RefusedByReason: map[string]uint64{}, Senders: []HEPSender{}, RefusedSources: []RefusedHEPSource{},
		SilenceThresholdSeconds: int(heplisten.DefaultSilenceWarn / time.Second)}
	if len(ls) == 0 {
		out.Note = "no HEP listener runs: start sipnab with -L ADDR to receive HEP"
		return out
	}
	out.Listening = true
	var senders []HEPSender
	var tracked uint64
	var kernel uint64
	haveKernel := false
	for _, l := range ls {
		s := l.Stats()
		out.Listeners = append(out.Listeners, l.Name())
		trust := l.Trust()
		if !slices.Contains(out.Trust, trust) {
			out.Trust = append(out.Trust, trust)
		}
		threshold := l.SilenceWarn()
		out.SilenceThresholdSeconds = int(threshold / time.Second)
		out.PacketsReceived += s.Received
		out.PacketsAdmitted += s.Admitted
		out.PacketsRefused += s.RefusedTotal()
		for k, v := range s.Refused {
			out.RefusedByReason[k] += v
		}
		if s.KernelDropped != nil {
			kernel += *s.KernelDropped
			haveKernel = true
		}
		out.SendersCap += l.MaxSenders()
		out.SendersEvicted += s.SendersEvicted
		out.RefusedSourcesCap += l.MaxRefused()
		out.RefusedSourcesEvicted += s.RefusedEvicted
		now := l.Now()
		for _, r := range l.Senders() {
			idle := now.Sub(r.LastSeen)
			row := HEPSender{Peer: r.Addr.String(), Identity: "claimed_by_sender", Trust: trust, Listener: l.Name(),
				Packets: r.Packets, Bytes: r.Bytes, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen,
				IdleSeconds: idle.Seconds(), Silent: idle >= threshold}
			row.Source = "hep:" + row.Peer
			if r.HasAgentID {
				id := r.AgentID
				row.CaptureID = &id
				row.Source = fmt.Sprintf("hep:%d@%s", id, row.Peer)
			}
			if row.Silent {
				out.Silent++
			}
			tracked += r.Packets
			senders = append(senders, row)
		}
		for _, r := range l.RefusedSources() {
			out.RefusedSources = append(out.RefusedSources, RefusedHEPSource{Peer: r.Addr.String(), Listener: l.Name(),
				Count: r.Count, Reasons: r.Reasons, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen})
		}
	}
	if haveKernel {
		out.KernelDropped = &kernel
	}
	out.SendersTracked = len(senders)
	if out.PacketsAdmitted > tracked {
		out.UntrackedPackets = out.PacketsAdmitted - tracked
	}
	// Silent senders first (longest silent first), then the busiest.
	sort.SliceStable(senders, func(i, j int) bool {
		a, b := senders[i], senders[j]
		if a.Silent != b.Silent {
			return a.Silent
		}
		if a.Silent {
			return a.LastSeen.Before(b.LastSeen)
		}
		return a.Packets > b.Packets
	})
	if len(senders) > limit {
		senders, out.Truncated = senders[:limit], true
	}
	out.Senders = append(out.Senders, senders...)
	out.Returned = len(out.Senders)
	sort.SliceStable(out.RefusedSources, func(i, j int) bool { return out.RefusedSources[i].LastSeen.After(out.RefusedSources[j].LastSeen) })
	if len(out.RefusedSources) > limit {
		out.RefusedSources = out.RefusedSources[:limit]
	}
	return out
}
