package tlsprobe

import "testing"

func TestParseMapsLineKeepsTLSLibrariesOnly(t *testing.T) {
	tests := []struct {
		line   string
		ok     bool
		flavor string
		path   string
		dev    string
		inode  uint64
	}{
		{"7f1c2a000000-7f1c2a020000 r--p 00000000 fe:00 326786 /usr/lib/x86_64-linux-gnu/libssl.so.3", true, "openssl", "/usr/lib/x86_64-linux-gnu/libssl.so.3", "fe:00", 326786},
		{"7f00-7f01 r-xp 00000000 08:01 4242 /opt/wolf/lib/libwolfssl.so.42.1.0", true, "wolfssl", "/opt/wolf/lib/libwolfssl.so.42.1.0", "08:01", 4242},
		// a library replaced on disk while mapped: the mapping names the old inode
		{"7f00-7f01 r-xp 00000000 08:01 77 /usr/lib/libssl.so.3 (deleted)", true, "openssl", "/usr/lib/libssl.so.3", "08:01", 77},
		{"7f00-7f01 r-xp 00000000 08:01 99 /usr/lib/libcrypto.so.3", false, "", "", "", 0},
		{"7f00-7f01 rw-p 00000000 00:00 0 [heap]", false, "", "", "", 0},
		{"7f00-7f01 r-xp 00000000 08:01 0 /usr/lib/libssl.so.3", false, "", "", "", 0},
		{"garbage", false, "", "", "", 0},
	}
	for _, tc := range tests {
		m, ok := parseMapsLine(tc.line)
		if ok != tc.ok || m.flavor != tc.flavor || m.path != tc.path || m.dev != tc.dev || m.inode != tc.inode {
			t.Errorf("%q: got %+v %v", tc.line, m, ok)
		}
	}
}

func TestDevStringWritesMajorMinorAsMapsDoes(t *testing.T) {
	// st_dev 0xfe00 is 254:0 (a device-mapper volume): maps writes "fe:00";
	// 0x10000301 is major 3, minor 0x10001 (new_encode_dev's high minor bits)
	for d, want := range map[uint64]string{0xfe00: "fe:00", 0x801: "08:01", 0x10000301: "03:10001"} {
		if got := devString(d); got != want {
			t.Errorf("devString(%#x) = %s, want %s", d, got, want)
		}
	}
}
