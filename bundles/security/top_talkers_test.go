package security

import (
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

type ttAnswer struct {
	By      string `json:"by"`
	Talkers []struct {
		Key      string   `json:"key"`
		Dialogs  int      `json:"dialogs"`
		Messages int      `json:"messages"`
		Invites  int      `json:"invites"`
		Answered int      `json:"answered"`
		Failed   int      `json:"failed"`
		SharePct *float64 `json:"share_pct"`
	} `json:"talkers"`
	Returned        int   `json:"returned"`
	DistinctTalkers int   `json:"distinct_talkers"`
	TotalMatched    int   `json:"total_matched"`
	Truncated       *bool `json:"truncated"`
	SourceExhausted bool  `json:"source_exhausted"`
}

type ttRow struct {
	key                                          string
	dialogs, messages, invites, answered, failed int
	share                                        float64
}

// TestTopTalkersCountsWhatTsharkCounts checks each dimension against the
// public captures' numbers, hand-verified with tshark:
//
//	tshark -r b2bua-asterisk.pcapng -Y sip -T fields -e ip.src | sort | uniq -c
//	  → 30 172.16.98.101, 20 172.16.98.145, 9 172.16.98.1, 1 172.16.98.102
//	tshark ... -e sip.Call-ID -e ip.src | sort -u  → the Call-IDs each address
//	  sent in: 11, 9, 3, 1 of the capture's 12 Call-IDs
//	User-Agent on requests, Server on responses, per Call-ID and message:
//	  Asterisk PBX 11.7.0~dfsg-1ubuntu1 11/30, Z 3.9.32144 r32121 8/13,
//	  Z 3.3.21933 r21903 3/7, repro 1.9.7 1/1
//
// The shares sum above 100 %: a dialog counts for each of its talkers.
//
// and on three more captures, the same commands:
//
//	sipp-branch-scenario.pcapng: 8989 SIP messages, all from 127.0.0.1, in
//	  1334 Call-IDs; INVITE answered 200 in 102 of them
//	  (-Y 'sip.Status-Code==200 && sip.CSeq.method=="INVITE"'), 4xx-6xx in
//	  1148 (-Y 'sip.Status-Code>=400 && sip.CSeq.method=="INVITE"')
//	sip-proxy.pcap: 10.33.6.100 4, 10.33.6.102 4, 10.33.6.101 3 in one call
//	Asterisk_ZFONE_XLITE.pcap: 192.168.10.2 14, 192.168.10.41 13 in 5
func TestTopTalkersCountsWhatTsharkCounts(t *testing.T) {
	b2bua := load(t, "b2bua-asterisk.pcapng")
	reg := load(t, "sip-register.pcap")
	for _, tc := range []struct {
		name  string
		c     *engine.Capture
		args  string
		total int
		want  []ttRow
	}{
		{"by ip: senders, busiest first", b2bua, `{"by":"ip"}`, 12, []ttRow{
			{"172.16.98.101", 11, 30, 2, 2, 0, 91.67},
			{"172.16.98.145", 9, 20, 1, 1, 0, 75},
			{"172.16.98.1", 3, 9, 1, 1, 0, 25},
			{"172.16.98.102", 1, 1, 0, 0, 0, 8.33},
		}},
		{"by ua: the banner each sender wrote", b2bua, `{"by":"ua"}`, 12, []ttRow{
			{"Asterisk PBX 11.7.0~dfsg-1ubuntu1", 11, 30, 2, 2, 0, 91.67},
			{"Z 3.9.32144 r32121", 8, 13, 0, 0, 0, 66.67},
			{"Z 3.3.21933 r21903", 3, 7, 1, 1, 0, 25},
			{"repro 1.9.7", 1, 1, 0, 0, 0, 8.33},
		}},
		// Eleven of the twelve dialogs are addressed to names
		// (telephone1, telephone2); one INVITE dials 2302 (13 messages).
		{"by prefix: one bucket per dialog", b2bua, `{"by":"prefix"}`, 12, []ttRow{
			{"(non-numeric)", 11, 47, 1, 1, 0, 91.67},
			{"2302", 1, 13, 1, 1, 0, 8.33},
		}},
		{"prefix_digits narrows the bucket", b2bua, `{"by":"prefix","prefix_digits":2,"filter":"method == INVITE"}`, 2, []ttRow{
			{"(non-numeric)", 1, 15, 1, 1, 0, 50},
			{"23", 1, 13, 1, 1, 0, 50},
		}},
		// sip-register.pcap: one REGISTER for 201 and its 200 OK.
		{"a REGISTER's AoR is its prefix", reg, `{"by":"prefix"}`, 1, []ttRow{{"201", 1, 2, 0, 0, 0, 100}}},
		{"one address, many calls", load(t, "sipp-branch-scenario.pcapng"), `{"by":"ip"}`, 1334, []ttRow{
			{"127.0.0.1", 1334, 8989, 1334, 102, 1148, 100},
		}},
		{"a proxy in the middle: each end once", load(t, "sip-proxy.pcap"), `{"by":"ip"}`, 1, []ttRow{
			{"10.33.6.100", 1, 4, 1, 1, 0, 100}, {"10.33.6.102", 1, 4, 1, 1, 0, 100}, {"10.33.6.101", 1, 3, 1, 1, 0, 100},
		}},
		{"two ends of five dialogs", load(t, "Asterisk_ZFONE_XLITE.pcap"), `{"by":"ip"}`, 5, []ttRow{
			{"192.168.10.2", 5, 14, 1, 1, 0, 100}, {"192.168.10.41", 5, 13, 1, 1, 0, 100},
		}},
		{"limit keeps the busiest", b2bua, `{"by":"ip","limit":1}`, 12, []ttRow{{"172.16.98.101", 11, 30, 2, 2, 0, 91.67}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got ttAnswer
			call(t, tc.c, "top_talkers", tc.args, &got)
			if got.TotalMatched != tc.total || got.Returned != len(tc.want) || !got.SourceExhausted {
				t.Fatalf("total_matched %d returned %d exhausted %v, want %d, %d, true", got.TotalMatched, got.Returned, got.SourceExhausted, tc.total, len(tc.want))
			}
			for i, w := range tc.want {
				g := got.Talkers[i]
				key := g.Key
				if got.By == "ua" {
					if key[:len(sdk.FenceOpen)] != sdk.FenceOpen {
						t.Errorf("ua key %q is not fenced", key)
					}
					key = unfence(key)
				}
				if key != w.key || g.Dialogs != w.dialogs || g.Messages != w.messages || g.Invites != w.invites ||
					g.Answered != w.answered || g.Failed != w.failed || g.SharePct == nil || *g.SharePct != w.share {
					t.Errorf("row %d: got %s %+v, want %+v", i, key, g, w)
				}
			}
			more := got.DistinctTalkers > len(tc.want)
			if got.Truncated == nil || *got.Truncated != more {
				t.Errorf("truncated %v, want %v (distinct %d)", got.Truncated, more, got.DistinctTalkers)
			}
		})
	}
}

// TestTopTalkersMatchingNothingIsNoRowsNotZeroShares: a filter matching no
// dialog answers no rows and total_matched 0, never a talker at 0 %.
func TestTopTalkersMatchingNothingIsNoRowsNotZeroShares(t *testing.T) {
	var got ttAnswer
	call(t, load(t, "b2bua-asterisk.pcapng"), "top_talkers", `{"by":"ip","filter":"method == MESSAGE"}`, &got)
	if got.TotalMatched != 0 || len(got.Talkers) != 0 || got.DistinctTalkers != 0 || got.Truncated == nil || *got.Truncated {
		t.Errorf("got %+v, want no rows, total 0, truncated false", got)
	}
}

// TestTopTalkersRefusals: an unknown dimension, a prefix width outside
// 1-15 and a filter that does not compile are refused as invalid
// arguments.
func TestTopTalkersRefusals(t *testing.T) {
	c := load(t, "sip-register.pcap")
	for _, tc := range []struct {
		args string
		kind sdk.Kind
	}{
		{`{"by":"pairs"}`, sdk.KindInvalidArgument},
		{`{"by":"prefix","prefix_digits":16}`, sdk.KindInvalidArgument},
		{`{"by":"prefix","prefix_digits":0}`, sdk.KindInvalidArgument},
		{`{"by":"ip","filter":"state =="}`, sdk.KindInvalidFilter},
		{`{}`, sdk.KindMissingArgument},
	} {
		e := callErr(t, c, "top_talkers", tc.args)
		if e.Code != sdk.CodeInvalidParams || e.StableKind() != tc.kind {
			t.Errorf("%s: got %d %s (%s), want -32602 %s", tc.args, e.Code, e.StableKind(), e.Message, tc.kind)
		}
	}
}
