package filter

import "testing"

const benchExpr = `(problems or short-calls) and method == INVITE and not (ua =~ '(?i)^friendly-scanner' or src.ip == 10.0.0.1) and rtp.codec != PCMU`

// benchRecord is an answered INVITE with media that matches benchExpr only
// through its last alternatives, so evaluation walks most of the tree.
func benchRecord() *MemRecord {
	m := &MemRecord{}
	m.SetStr(FieldMethod, "INVITE").SetStr(FieldState, "Completed").SetStr(FieldUA, "Asterisk PBX 18.2.0").
		SetStr(FieldSrcIP, "192.0.2.10").SetStr(FieldDstIP, "198.51.100.7").SetStr(FieldFromUser, "alice").
		SetNum(FieldPDD, 1.2).SetNum(FieldDuration, 2.1).SetNum(FieldRetransmits, 0).
		SetNum(FieldRTPLoss, 0.4).SetNum(FieldRTPJitter, 3.1).Add(FieldRTPCodec, "G722", "opus")
	for f := Field(1); f < fieldEnd; f++ {
		if f.Type() == TypeBool {
			m.SetBool(f, false)
		}
	}
	return m
}

// TestMatchAllocatesNothing is the zero-allocation promise of Record: Match
// allocates nothing on any kind of comparison.
func TestMatchAllocatesNothing(t *testing.T) {
	rec := benchRecord().Add(FieldPayload, "INVITE sip:bob@example.com SIP/2.0\r\nUser-Agent: x\r\n").Add(FieldRTPSSRC, "0x0000abcd")
	for _, expr := range []string{
		benchExpr, "problems", "payload =~ 'User-Agent: [a-z]'", "rtp.ssrc == 0xabcd", "dst.ip > 10.0.0.0",
		"from.user < bob", "not one_way == true", "pdd != 1.2",
	} {
		f := mustCompile(t, expr)
		if n := testing.AllocsPerRun(200, func() { f.Match(rec) }); n != 0 {
			t.Errorf("%q: %v allocations per Match, want 0", expr, n)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(benchExpr, defTh); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileProblems(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("problems", defTh); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	f := mustCompile(b, benchExpr)
	rec := benchRecord()
	if !f.Match(rec) {
		b.Fatal("bench record must match")
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Match(rec)
	}
}

func BenchmarkMatchProblemsMiss(b *testing.B) {
	// A healthy call walks all twelve alternatives of problems.
	f := mustCompile(b, "problems")
	rec := benchRecord()
	if f.Match(rec) {
		b.Fatal("healthy record must not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Match(rec)
	}
}

func BenchmarkMatchPayloadRegex(b *testing.B) {
	f := mustCompile(b, `payload =~ 'Reason: Q\.850;cause=(1[67])'`)
	rec := benchRecord()
	msg := "BYE sip:alice@192.0.2.10:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 198.51.100.7:5060;branch=z9hG4bK776asdhds\r\n" +
		"From: <sip:bob@example.com>;tag=1928301774\r\nTo: <sip:alice@example.com>;tag=a6c85cf\r\nCall-ID: a84b4c76e66710\r\n" +
		"CSeq: 2 BYE\r\nReason: Q.850;cause=16;text=\"Normal call clearing\"\r\nContent-Length: 0\r\n\r\n"
	for range 8 {
		rec.Add(FieldPayload, msg)
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Match(rec)
	}
}
