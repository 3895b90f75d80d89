package reference

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/filter"
)

func TestTopicsResolve(t *testing.T) {
	got := Topics()
	if want := []string{"filter-language", "mos-and-codecs"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got topics %v, want %v", got, want)
	}
	for _, topic := range got {
		t.Run(topic, func(t *testing.T) {
			text, ok := Page(topic, filter.DefaultThresholds())
			if !ok || !strings.HasPrefix(text, "# ") {
				t.Fatalf("got ok=%v and a page starting %.20q, want a Markdown page", ok, text)
			}
		})
	}
}

func TestUnknownTopic(t *testing.T) {
	for _, topic := range []string{"", "MOS-and-codecs", "mos", "filter-language/"} {
		if text, ok := Page(topic, filter.DefaultThresholds()); ok || text != "" {
			t.Errorf("Page(%q): got ok=%v text %d bytes, want false and empty", topic, ok, len(text))
		}
	}
}

// The filter page is the filter package's own reference with the run's
// thresholds, not the defaults.
func TestFilterLanguageFollowsTheRunThresholds(t *testing.T) {
	th := filter.Thresholds{PDDSeconds: 4.5, ShortCallSeconds: 7, LossPct: 2, JitterMs: 30, Retransmits: 9}
	got, _ := Page(TopicFilter, th)
	if want := filter.Reference(th); got != want {
		t.Fatalf("got a page differing from filter.Reference(th)")
	}
	for _, want := range []string{"`pdd > 4.5`", "duration < 7`", "rtp.loss > 2 ", "retransmits > 9 "} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(got, "pdd > 11") {
		t.Errorf("page still expands with the default PDD threshold 11")
	}
}

func TestMOSPage(t *testing.T) {
	page, _ := Page(TopicMOS, filter.DefaultThresholds())
	tests := []struct {
		name string
		want string
	}{
		// G.113 values as core/mos holds them.
		{"PCMU published", "| PCMU | 0 | 0 | 25.1 | published |"},
		{"PCMA published", "| PCMA | 8 | 0 | 25.1 | published |"},
		{"G729 published", "| G729 | 18 | 10 | 19 | published |"},
		{"G729A as G729", "| G729A | dynamic | 10 | 19 | published |"},
		{"opus scored as G.711", "| opus | dynamic | 0 | 25.1 | published |"},
		{"G722 placeholder", "| G722 | 9 | 5 | 10 | unpublished |"},
		{"DVI4 several payload types", "| DVI4 | 5, 6, 16, 17 | 5 | 10 | unpublished |"},
		{"AMR placeholder", "| AMR | dynamic | 5 | 10 | unpublished |"},
		// ITU-T G.113 Appendix I rows: G.726 per bit rate, G.728, G.723.1,
		// GSM full rate, half rate and EFR; a Bpl G.113 does not give is
		// marked placeholder.
		{"G726-32 static PT 2", "| G726-32 | 2 | 7 | 10 (placeholder) | published | ITU-T G.113 Appendix I: G.726 ADPCM 32 kbit/s |"},
		{"G726-16", "| G726-16 | dynamic | 50 | 10 (placeholder) | published | ITU-T G.113 Appendix I: G.726 ADPCM 16 kbit/s |"},
		{"G726-24", "| G726-24 | dynamic | 25 | 10 (placeholder) | published |"},
		{"G726-40", "| G726-40 | dynamic | 2 | 10 (placeholder) | published |"},
		{"AAL2-G726-32", "| AAL2-G726-32 | dynamic | 7 | 10 (placeholder) | published |"},
		{"G728", "| G728 | 15 | 7 | 10 (placeholder) | published | ITU-T G.113 Appendix I: G.728 LD-CELP 16 kbit/s |"},
		{"G723 at 6.3k", "| G723 | 4 | 15 | 16.1 | published | ITU-T G.113 Appendix I: G.723.1 MP-MLQ 6.3 kbit/s |"},
		{"G723 at 5.3k", "20-octet frames 5.3 kbit/s: Ie 19, Bpl 10 (placeholder)"},
		{"GSM", "| GSM | 3 | 20 | 10 (placeholder) | published | ITU-T G.113 Appendix I: GSM 06.10 full rate |"},
		{"GSM-EFR", "| GSM-EFR | dynamic | 5 | 10 | published | ITU-T G.113 Appendix I: GSM 06.60 enhanced full rate |"},
		{"GSM-HR", "| GSM-HR-08 | dynamic | 23 | 10 (placeholder) | published | ITU-T G.113 Appendix I: GSM 06.20 half rate |"},
		{"loss without Bpl", `grounding "published_ie_placeholder_bpl"`},
		{"not applicable", "says mos_applicable false and why in mos_note"},
		{"grounded list", "Grounded without any operator setting: PCMU, G726-32, GSM, G723, PCMA, G728, G729, opus, G729A, G729AB, G726-16, G726-24, G726-40, AAL2-G726-16, AAL2-G726-24, AAL2-G726-32, AAL2-G726-40, GSM-EFR, GSM-HR-08."},
		{"R0", "| R0 | 93.2 "},
		{"delay cap", "capped at 3000 ms"},
		{"assumed delay", "otherwise an assumed 100 ms"},
		{"degraded rule", "loss is over 5 %, jitter over 50 ms (the defaults:\n--loss-threshold and --jitter-threshold replace them for the run), or a grounded R is\nunder 70 (MOS about 3.6)"},
		// By hand: d = 100 ms, Id = 2.4, R = 90.8,
		// MOS = 1 + 0.035·90.8 + 90.8·30.8·9.2·7e-6 = 4.358.
		{"PCMU clean", "| 0 % | 4.36 (R 90.8) | 4.22 (R 85.8) |"},
		// 5 % loss: Ie,eff = 95·5/30.1 = 15.78, R = 75.02, MOS = 3.82;
		// placeholder: 5 + 90·5/15 = 35, R = 55.8, MOS = 2.88.
		{"5 % loss", "| 5 % | 3.82 (R 75) | 2.88 (R 55.8) |"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(page, tc.want) {
				t.Errorf("page lacks %q", tc.want)
			}
		})
	}
}
