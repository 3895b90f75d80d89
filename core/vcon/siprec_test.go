package vcon

import (
	"context"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
)

// siprecCapture is the recording session made with SIPp
// (testdata/made/siprec-metadata.sh); its INVITE's metadata as tshark
// decodes it is testdata/made/siprec-metadata.pcap.tshark.txt.
const siprecCallID = "1-30771@127.0.0.1"

func loadMade(t *testing.T, name string) *engine.Capture {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Root() + "/testdata/made/" + name}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	return c
}

// TestMetadataOfARecordingSession checks every value against tshark's
// decoding of frame 1 (the INVITE): datamode complete, session
// hVpd7YQgRW2nD22h7q60JQ==, participants srfBElmCRp2QB23b7Mpk0w== (aor
// sip:bob@biloxi.example.com, name Bob Biloxi) and zSfPoSvdSDCmU3A3TRDxAw==
// (aor sip:alice@atlanta.example.com, no name), streams
// UAAMm5GRQKSCMVvLyl4rFw== (label 96, sent by zSfPo...) and
// i1Pz3to5hGk8fuXl+PbwCw== (label 97, sent by srfB...); the SDP's m= lines
// 0 (audio 12240, a=label:96) and 1 (audio 12242, a=label:97).
func TestMetadataOfARecordingSession(t *testing.T) {
	c := loadMade(t, "siprec-metadata.pcap")
	det, ok := c.Dialogs().Get(siprecCallID)
	if !ok {
		t.Fatal("no recording session dialog")
	}
	f, found := FindMetadata(det)
	if !found || f.Carrying != 1 || f.Unreadable != 0 || !f.RequireSIPREC || f.Message != 0 || !strings.HasPrefix(f.Frame, "siprec-metadata.pcap#1@") {
		t.Fatalf("found %v %+v", found, f)
	}
	md := f.Metadata
	if md.Mode != "complete" || md.SessionID != "hVpd7YQgRW2nD22h7q60JQ==" || md.Sessions != 1 {
		t.Errorf("metadata %+v", md)
	}
	wantP := []Participant{
		{ID: "srfBElmCRp2QB23b7Mpk0w==", AoR: "sip:bob@biloxi.example.com", Name: "Bob Biloxi"},
		{ID: "zSfPoSvdSDCmU3A3TRDxAw==", AoR: "sip:alice@atlanta.example.com"},
	}
	if len(md.Participants) != 2 || md.Participants[0] != wantP[0] || md.Participants[1] != wantP[1] {
		t.Errorf("participants %+v", md.Participants)
	}
	wantS := []Stream{
		{ID: "UAAMm5GRQKSCMVvLyl4rFw==", Label: "96", SessionID: "hVpd7YQgRW2nD22h7q60JQ==", ParticipantID: "zSfPoSvdSDCmU3A3TRDxAw=="},
		{ID: "i1Pz3to5hGk8fuXl+PbwCw==", Label: "97", SessionID: "hVpd7YQgRW2nD22h7q60JQ==", ParticipantID: "srfBElmCRp2QB23b7Mpk0w=="},
	}
	if len(md.Streams) != 2 || md.Streams[0] != wantS[0] || md.Streams[1] != wantS[1] {
		t.Errorf("streams %+v", md.Streams)
	}
	if f.Labels["96"] != (SDPLabel{Index: 0, Media: "audio", Port: 12240}) || f.Labels["97"] != (SDPLabel{Index: 1, Media: "audio", Port: 12242}) {
		t.Errorf("labels %+v", f.Labels)
	}
}

func TestHostileMetadataErrors(t *testing.T) {
	deep := "<recording>" + strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100) + "</recording>"
	many := "<recording>" + strings.Repeat("<a/>", MaxMetadataElements) + "</recording>"
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "", "no <recording>"},
		{"another root", "<html/>", "root element"},
		{"unbalanced", "<recording><session>", "unexpected EOF"},
		{"too deep", deep, "nested deeper"},
		{"too many elements", many, "more than"},
		{"too large", "<recording>" + strings.Repeat(" ", MaxMetadataBytes) + "</recording>", "larger than"},
		{"entity bomb", `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><recording><datamode>&b;</datamode></recording>`, "invalid character entity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMetadata([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Rows past the caps are counted, not kept.
	rows := "<recording>" + strings.Repeat("<participant participant_id='p'/>", MaxParticipants+3) + "</recording>"
	md, err := ParseMetadata([]byte(rows))
	if err != nil || len(md.Participants) != MaxParticipants || md.ParticipantsDropped != 3 {
		t.Errorf("%d kept, %d dropped, %v", len(md.Participants), md.ParticipantsDropped, err)
	}
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte(`<recording xmlns="urn:ietf:params:xml:ns:recording:1"><datamode>partial</datamode><participant participant_id="a"><nameID aor="sip:a@b"><name>A</name></nameID></participant><stream stream_id="s"><label>1</label></stream><participantstreamassoc participant_id="a"><send>s</send></participantstreamassoc></recording>`))
	f.Add([]byte(`<recording><stream/><stream stream_id=""><label></label></stream></recording>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		md, err := ParseMetadata(doc)
		if err != nil {
			return
		}
		if len(md.Participants) > MaxParticipants || len(md.Streams) > MaxStreams {
			t.Fatalf("caps exceeded: %d participants, %d streams", len(md.Participants), len(md.Streams))
		}
		for _, p := range md.Participants {
			if len(p.AoR) > maxValueBytes || len(p.Name) > maxValueBytes || len(p.ID) > maxValueBytes {
				t.Fatal("a value past its cut")
			}
		}
	})
}
