package media

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// retaining loads a public capture with --retain-audio.
func retaining(t *testing.T, name string) *engine.Capture {
	t.Helper()
	return loadWith(t, engine.Config{Node: "test", Media: media.Config{RetainAudio: true}}, name)
}

// wavChannel reads one channel (0 or 1) of a 16-bit stereo WAV this tool
// wrote, checking its 44-byte header.
func wavChannel(t *testing.T, b []byte, ch int) []int16 {
	t.Helper()
	if len(b) < 44 || string(b[0:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " || string(b[36:40]) != "data" ||
		binary.LittleEndian.Uint16(b[22:]) != 2 || binary.LittleEndian.Uint32(b[24:]) != 8000 || binary.LittleEndian.Uint16(b[34:]) != 16 ||
		int(binary.LittleEndian.Uint32(b[40:])) != len(b)-44 || int(binary.LittleEndian.Uint32(b[4:])) != len(b)-8 {
		t.Fatalf("not a 16-bit stereo 8 kHz WAV: % x", b[:min(44, len(b))])
	}
	var out []int16
	for p := 44 + 2*ch; p+2 <= len(b); p += 4 {
		out = append(out, int16(binary.LittleEndian.Uint16(b[p:])))
	}
	return out
}

// soxDecode decodes one stream's payloads the way a peer does: tshark
// extracts them (-Y rtp.ssrc==X -T fields -e rtp.timestamp -e
// rtp.payload), sox decodes the raw G.711 (sox -t ul|al -r 8000 -c 1 raw
// out.wav), and the samples of sox's WAV come back with each packet's RTP
// timestamp and payload length.
func soxDecode(t *testing.T, capture, ssrc, law string) ([]int16, []soxPacket) {
	t.Helper()
	for _, tool := range []string{"tshark", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (CI installs it): the WAV cannot be checked against a peer", tool)
		}
	}
	out, err := exec.Command("tshark", "-r", capture, "-Y", "rtp.ssrc=="+ssrc, "-T", "fields", "-e", "rtp.timestamp", "-e", "rtp.payload").Output()
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	var pkts []soxPacket
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ts, payload, _ := strings.Cut(l, "\t")
		b, err := hex.DecodeString(strings.ReplaceAll(payload, ":", ""))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseUint(ts, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, soxPacket{ts: uint32(n), n: len(b)})
		raw = append(raw, b...)
	}
	dir := t.TempDir()
	in, wav := filepath.Join(dir, "raw."+law), filepath.Join(dir, "sox.wav")
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("sox", "-t", law, "-r", "8000", "-c", "1", in, "-b", "16", wav).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v %s", err, b)
	}
	b, err := os.ReadFile(wav)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "data")
	if i < 0 {
		t.Fatal("sox's WAV has no data chunk")
	}
	var s []int16
	for p := i + 8; p+2 <= len(b); p += 2 {
		s = append(s, int16(binary.LittleEndian.Uint16(b[p:])))
	}
	return s, pkts
}

// soxPacket is one packet of the stream tshark listed.
type soxPacket struct {
	ts uint32
	n  int
}

// placed lays sox's samples out by RTP timestamp from start, silence
// between: the channel the WAV must hold.
func placed(samples []int16, pkts []soxPacket, start int) []int16 {
	var out []int16
	k := 0
	for _, p := range pkts {
		at := start + int(int32(p.ts-pkts[0].ts))
		if need := at + p.n; need > len(out) {
			out = append(out, make([]int16, need-len(out))...)
		}
		copy(out[at:], samples[k:k+p.n])
		k += p.n
	}
	return out
}

// TestExportAudioMatchesSox: the sample capture's two calls, one PCMU and
// one PCMA stream each (sent 10.0.2.15 → 10.0.2.20, no loss: tshark
// -z rtp,streams), exported; channel 1 holds exactly the samples sox
// decodes from the same payloads, channel 2 is silent (nothing flowed
// back).
func TestExportAudioMatchesSox(t *testing.T) {
	c := retaining(t, "sip-rtp-g711.pcap")
	dir := t.TempDir()
	tool := exportAudioTool(&deps{capture: c, root: sdk.NewFileRoot(dir, nil)})
	for _, tc := range []struct{ callID, ssrc, law string }{
		{"1-1966@10.0.2.20", "0x343da99b", "ul"},
		{"1-1968@10.0.2.20", "0x343ffa34", "al"},
	} {
		t.Run(tc.law, func(t *testing.T) {
			name := tc.law + ".wav"
			var got ExportAudio
			call(t, tool, `{"call_id":`+quote(tc.callID)+`,"filename":`+quote(name)+`}`, &got)
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || len(b) != got.Bytes || got.Path != name {
				t.Fatalf("file %s: %d bytes (%v), answer says %d", name, len(b), err, got.Bytes)
			}
			want, _ := soxDecode(t, "../../testdata/sip-rtp-g711.pcap", tc.ssrc, tc.law)
			left, right := wavChannel(t, b, 0), wavChannel(t, b, 1)
			if len(left) != len(want) {
				t.Fatalf("channel 1 has %d samples, sox %d", len(left), len(want))
			}
			for i := range want {
				if left[i] != want[i] {
					t.Fatalf("sample %d: got %d, sox %d", i, left[i], want[i])
				}
			}
			for i, v := range right {
				if v != 0 {
					t.Fatalf("channel 2 sample %d is %d, want silence", i, v)
				}
			}
			ch := got.Channels
			if len(ch) != 2 || ch[0].SSRC != tc.ssrc || ch[0].SilenceMs != 0 || ch[0].StartMs != 0 || ch[1].SSRC != "" || ch[1].Frames != 0 {
				t.Errorf("channels %+v", ch)
			}
			if got.DurationMs != float64(len(want))/8 || !got.Retention.Enabled {
				t.Errorf("duration %g ms, want %g; retention %+v", got.DurationMs, float64(len(want))/8, got.Retention)
			}
		})
	}
}

// TestExportAudioBothDirections: SIP_CALL_RTP_G711's call
// 12013223@200.57.7.195 has PCMA both ways (tshark -z rtp,streams:
// 0xd2bd4e3e 200.57.7.204:8000 → 200.57.7.196:40376, 548 packets, first;
// 0x58f33dea back, 891 packets, none lost). The first stream's ring holds
// all 548; the second's the last 1500 of 891, so all. Each channel equals
// sox's decoding of its stream from where its first frame sits.
func TestExportAudioBothDirections(t *testing.T) {
	c := retaining(t, "SIP_CALL_RTP_G711")
	dir := t.TempDir()
	var got ExportAudio
	call(t, exportAudioTool(&deps{capture: c, root: sdk.NewFileRoot(dir, nil)}), `{"call_id":"12013223@200.57.7.195","filename":"both.wav"}`, &got)
	ch := got.Channels
	if len(ch) != 2 || ch[0].SSRC != "0xd2bd4e3e" || ch[1].SSRC != "0x58f33dea" || ch[0].Frames != 548 || ch[1].Frames != 891 {
		t.Fatalf("channels %+v", ch)
	}
	b, err := os.ReadFile(filepath.Join(dir, "both.wav"))
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range ch {
		samples := wavChannel(t, b, i)
		sox, pkts := soxDecode(t, "../../testdata/captures/public/SIP_CALL_RTP_G711", x.SSRC, "al")
		want := placed(sox, pkts, int(x.StartMs*8))
		// The sender skipped RTP timestamps during silence (tshark: steps of
		// 8480, 16320, 47200 ... where 160 is one packet), so the channel
		// holds sox's samples at their timestamps and silence between.
		if len(samples) < len(want) {
			t.Fatalf("channel %d: %d samples, want at least %d", i+1, len(samples), len(want))
		}
		for k := range samples {
			w := int16(0)
			if k < len(want) {
				w = want[k]
			}
			if samples[k] != w {
				t.Fatalf("channel %d sample %d: got %d, sox placed by timestamp %d", i+1, k, samples[k], w)
			}
		}
	}
	// Silence inside each channel's span: 13500 ms and 8898 ms, the
	// samples between the first and last packet no payload covers, from
	// tshark's rtp.timestamp and payload lengths (udp.length - 20):
	// 0x58f33dea carries 16 packets of one byte among its 875 of 160.
	if ch[0].SilenceMs != 13500 || ch[1].SilenceMs != 8898 || ch[1].StartMs != 49.875 {
		t.Errorf("silence %g and %g ms, start %g; want 13500, 8898, 49.875", ch[0].SilenceMs, ch[1].SilenceMs, ch[1].StartMs)
	}
}

// TestExportAudioRefusals: without --retain-audio the tool refuses naming
// the flag (-32602, not_enabled); without a file root the sandbox refuses;
// a call with no G.711 audio is -32603 saying what was measured; an
// unknown call_id and a taken or path-like filename are -32602.
func TestExportAudioRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "taken.wav"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root := sdk.NewFileRoot(dir, nil)
	off := load(t, "sip-rtp-g711.pcap")
	on := retaining(t, "sip-rtp-g711.pcap")
	g722 := retaining(t, "sip-rtp-g722.pcap")
	g722ID := g722.Dialogs().CallIDs()[0]
	for _, tc := range []struct {
		name    string
		d       *deps
		args    string
		code    int
		kind    sdk.Kind
		message string
	}{
		{"flag off", &deps{capture: off, root: root}, `{"call_id":"1-1966@10.0.2.20","filename":"a.wav"}`, sdk.CodeInvalidParams, sdk.KindNotEnabled, "--retain-audio"},
		{"no file root", &deps{capture: on}, `{"call_id":"1-1966@10.0.2.20","filename":"a.wav"}`, sdk.CodeInvalidParams, sdk.KindNotEnabled, "--mcp-file-root"},
		{"unknown call", &deps{capture: on, root: root}, `{"call_id":"nope","filename":"a.wav"}`, sdk.CodeInvalidParams, sdk.KindUnknownID, "unknown call_id"},
		{"taken name", &deps{capture: on, root: root}, `{"call_id":"1-1966@10.0.2.20","filename":"taken.wav"}`, sdk.CodeInvalidParams, sdk.KindFileRefused, ""},
		{"path, not a name", &deps{capture: on, root: root}, `{"call_id":"1-1966@10.0.2.20","filename":"../a.wav"}`, sdk.CodeInvalidParams, sdk.KindFileRefused, ""},
		{"nothing retained", &deps{capture: g722, root: root}, `{"call_id":` + quote(g722ID) + `,"filename":"b.wav"}`, sdk.CodeInternal, "", "1 G722; export_audio decodes G.711"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := callErr(t, exportAudioTool(tc.d), tc.args)
			if e.Code != tc.code || (tc.kind != "" && e.Kind != tc.kind) || !strings.Contains(e.Message, tc.message) {
				t.Errorf("got %d %s %q, want %d %s containing %q", e.Code, e.Kind, e.Message, tc.code, tc.kind, tc.message)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "a.wav")); err == nil {
		t.Error("a refused call wrote a file")
	}
}

// TestRenderWAVBoundsSenderTimestamps: RTP timestamps are sender-written.
// A frame 2^31 samples ahead of the first is counted out of range and not
// placed; a late frame 100 samples behind the first becomes the origin
// (the first frame then sits at sample 100). The file is as long as the
// frames in range ask (100 + 320 samples), never what the timestamps ask.
func TestRenderWAVBoundsSenderTimestamps(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	payload := bytes.Repeat([]byte{0x80}, 160) // µ-law 32124
	frame := func(ts uint32) media.AudioFrame {
		return media.AudioFrame{Arrival: at, Timestamp: ts, Codec: "PCMU", Payload: payload}
	}
	r := renderWAV([]media.StreamAudio{{SSRC: "0x00000001", Src: "192.0.2.1:4000", Dst: "192.0.2.2:5000",
		Frames: []media.AudioFrame{frame(1000), frame(1160), frame(1000 + 1<<31 - 1), frame(900)}}})
	ch := r.channels[0]
	if ch.Frames != 3 || ch.FramesOutOfRange != 1 || r.durationMs != 52.5 || len(r.wav) != 44+420*4 {
		t.Errorf("frames %d out of range %d, %g ms, %d bytes; want 3, 1, 52.5 ms, %d bytes", ch.Frames, ch.FramesOutOfRange, r.durationMs, len(r.wav), 44+420*4)
	}
	if left := wavChannel(t, r.wav, 0); left[0] != 32124 || left[419] != 32124 || ch.SilenceMs != 0 {
		t.Errorf("samples %d and %d, silence %g ms; want 32124 and no silence", left[0], left[419], ch.SilenceMs)
	}
}
