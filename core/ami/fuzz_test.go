package ami

import (
	"bytes"
	"testing"
)

func FuzzInspect(f *testing.F) {
	for _, s := range []string{
		"Asterisk Call Manager/5.0.1\r\n",
		"Action: Login\r\nUsername: admin\r\nSecret: s3cret\r\n\r\n",
		"action: login\nusername:\nsecret:\n",
		"Action: login",
		"Action: Login\r\nUsername: " + string(bytes.Repeat([]byte{0xff}, 100)) + "\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, ok := Inspect(b)
		if !ok {
			if o != (Observation{}) {
				t.Fatalf("no match but observation %+v", o)
			}
			return
		}
		if len(o.Username) > MaxValueChars {
			t.Fatalf("username of %d bytes, cap %d", len(o.Username), MaxValueChars)
		}
		if o.Kind == Banner && (o.Username != "" || o.SecretPresent) {
			t.Fatalf("banner with login fields: %+v", o)
		}
		if o.Kind != Banner && o.Kind != CleartextLogin {
			t.Fatalf("kind %d", o.Kind)
		}
	})
}
