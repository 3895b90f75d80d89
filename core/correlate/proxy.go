package correlate

import (
	"fmt"

	"github.com/sipnab/sipnab/core/dialog"
)

// ProxyEvidence reports whether one dialog's own messages show a proxy that
// kept the Call-ID: the same request (method, CSeq, From tag) captured on
// two hops, from different senders, the later copy carrying more Via
// entries (RFC 3261 §16.6 step 8: a proxy adds its Via and forwards the
// request unchanged in its dialog identifiers). It returns a sentence that
// names the request, the hops, the Via counts and the frames, or "" when
// the capture shows no such pair: then nothing says the hop stayed a proxy
// (a B2BUA's other leg may simply not be in the capture).
func ProxyEvidence(det *dialog.Detail) string {
	type seen struct {
		msg  *dialog.Message
		vias int
	}
	type reqKey struct {
		method, tag string
		cseq        uint32
	}
	first := map[reqKey]seen{} // bounded by the dialog's retained messages
	for i := range det.Messages {
		m := &det.Messages[i]
		if m.Msg == nil || !m.Msg.IsRequest || m.Retransmission {
			continue
		}
		k := reqKey{m.Msg.Method, m.Msg.From.Tag, m.Msg.CSeq.Number}
		n := len(m.Msg.Vias)
		f, ok := first[k]
		if !ok {
			first[k] = seen{m, n}
			continue
		}
		if f.msg.Src != m.Src && n > f.vias {
			return fmt.Sprintf("%s CSeq %d seen on two hops: %s→%s with %d Via (%s), then %s→%s with %d Via (%s): a proxy added its Via and kept the Call-ID",
				m.Msg.Method, m.Msg.CSeq.Number, f.msg.Src, f.msg.Dst, f.vias, frameText(f.msg), m.Src, m.Dst, n, frameText(m))
		}
	}
	return ""
}

func frameText(m *dialog.Message) string {
	if m.Frame.IsZero() {
		return fmt.Sprintf("message %d", m.Index)
	}
	return "frame " + m.Frame.String()
}
