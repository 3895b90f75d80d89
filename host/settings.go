package host

import (
	"fmt"
	"reflect"
	"strings"
)

// Settings is sipnab's configuration, typed: koanf unmarshals the merged
// layers (defaults < config file < SIPNAB_ environment < flags) into it once
// at startup, and the rest of the host reads its fields. Each field's koanf
// tag is its config-file key; the options table (config.go) gives each its
// flag, default and help line. A key in a config file that is no field here
// (or a field of the wrong type) is a startup error naming the key and the
// file line.
type Settings struct {
	Config    string   `koanf:"config"` // command line only
	NoTUI     bool     `koanf:"no_tui"`
	Input     []string `koanf:"input"`
	Interface []string `koanf:"interface"`
	HEP       struct {
		Listen           []string `koanf:"listen"`
		Allow            []string `koanf:"allow"`
		RateLimitPerPeer int      `koanf:"rate_limit_per_peer"`
		SilenceWarn      int      `koanf:"silence_warn"`
		// HEP agent (-H, docs/egress.md).
		Send          string `koanf:"send"`
		SendTransport string `koanf:"send_transport"`
		CaptureID     int    `koanf:"capture_id"`
		AuthKey       string `koanf:"auth_key"`
	} `koanf:"hep"`
	// Output is -O: the frames read, re-emitted (docs/egress.md).
	Output struct {
		File         string `koanf:"file"`
		SplitSize    string `koanf:"split_size"`
		SplitSeconds int    `koanf:"split_seconds"`
		Ring         int    `koanf:"ring"`
	} `koanf:"output"`
	JSON       bool   `koanf:"json_run"` // --json-run; command line only
	Report     bool   `koanf:"report"`   // command line only
	Limit      int    `koanf:"limit"`
	MaxStoreMB int    `koanf:"max_store_mb"`
	Cores      int    `koanf:"cores"`
	NodeName   string `koanf:"node_name"`
	Quiet      bool   `koanf:"quiet"`
	User       string `koanf:"user"`
	Media      struct {
		MaxStreams  int     `koanf:"max_streams"`
		OneWayDelay float64 `koanf:"one_way_delay"`
		// RetainAudio is --retain-audio (core/media/audio.go).
		RetainAudio bool `koanf:"retain_audio"`
		// CodecIe is [media.codec_ie], a free section (host/codecie.go).
		CodecIe        map[string]any `koanf:"codec_ie"`
		AMRWBListening string         `koanf:"amr_wb_listening"`
	} `koanf:"media"`
	// VCon is the [vcon] section: --vcon-max-inline-media
	// (core/vcon.Options, the vcon bundle's export_vcon).
	VCon struct {
		MaxInlineMedia int `koanf:"max_inline_media"`
	} `koanf:"vcon"`
	// Capture is the [capture] section (host/capture.go).
	Capture struct {
		PortRange   string `koanf:"portrange"`
		WSPortRange string `koanf:"ws_portrange"`
		BPFFile     string `koanf:"bpf_file"`
	} `koanf:"capture"`
	// Detect is the [detect] section: the security detectors
	// (core/detect, engine.md §13), each off until armed.
	Detect struct {
		Scanner         bool   `koanf:"scanner"`
		RegFlood        bool   `koanf:"reg_flood"`
		DigestLeak      bool   `koanf:"digest_leak"`
		FraudDetect     bool   `koanf:"fraud_detect"`
		FindingsHistory int    `koanf:"findings_history"`
		Fail2banLog     string `koanf:"fail2ban_log"`
	} `koanf:"detect"`
	MCP    MCPSettings `koanf:"mcp"`
	Limits struct {
		MCPMaxRows int `koanf:"mcp_max_rows"`
	} `koanf:"limits"`
	Analysis struct {
		PDDThreshold        float64 `koanf:"pdd_threshold"`
		ShortCallThreshold  float64 `koanf:"short_call_threshold"`
		LossThreshold       float64 `koanf:"loss_threshold"`
		JitterThreshold     float64 `koanf:"jitter_threshold"`
		RetransmitThreshold int     `koanf:"retransmit_threshold"`
	} `koanf:"analysis"`
	Correlation struct {
		Window         float64  `koanf:"window"`
		XCallIDHeaders []string `koanf:"x_call_id_headers"`
	} `koanf:"correlation"`

	// Command line only: one-shot modes and batch output.
	Version    bool    `koanf:"version"`
	MintToken  bool    `koanf:"mint_token"`
	TokenID    string  `koanf:"token_id"`
	TokenScope string  `koanf:"token_scope"`
	CallReport string  `koanf:"call_report"`
	Duration   float64 `koanf:"duration"`
	Count      int     `koanf:"count"`
	Markdown   bool    `koanf:"markdown"`
	NoCLIPrint bool    `koanf:"no_cli_print"`

	// Batch outputs beside --json-run and --report (host/outputs.go).
	JSONMessages bool   `koanf:"json"`
	JSONDialogs  bool   `koanf:"json_dialogs"`
	Analyze      bool   `koanf:"analyze"`
	JSONAnalyze  bool   `koanf:"json_analyze"`
	Filter       string `koanf:"filter"`
	CallsOnly    bool   `koanf:"calls_only"`
	Raw          bool   `koanf:"raw"`
	Hexdump      bool   `koanf:"hexdump"`
	DeltaTime    bool   `koanf:"delta_time"`
	ProtoNumbers bool   `koanf:"proto_numbers"`
	PayloadLimit int    `koanf:"payload_limit"`
	Color        string `koanf:"color"`
	LintFailOn   string `koanf:"lint_fail_on"`

	// Bundles are the [bundles.<id>] sections, each decoded by its bundle
	// (Config.BundleDecoder), strictly.
	Bundles map[string]any `koanf:"bundles"`
}

// MCPSettings is the [mcp] section.
type MCPSettings struct {
	Enabled          bool     `koanf:"enabled"`
	Transport        string   `koanf:"transport"`
	Bind             string   `koanf:"bind"`
	Tools            []string `koanf:"tools"`
	OutputSchemas    bool     `koanf:"output_schemas"`
	Token            string   `koanf:"token"`
	TokenFile        string   `koanf:"token_file"`
	SigningKey       []string `koanf:"signing_key"`
	SigningKeyFile   []string `koanf:"signing_key_file"`
	RevokedFile      string   `koanf:"revoked_file"`
	TokenTTL         int      `koanf:"token_ttl"`
	AllowedHost      []string `koanf:"allowed_host"`
	AllowedOrigin    []string `koanf:"allowed_origin"`
	ResourceURL      string   `koanf:"resource_url"`
	AuditFile        string   `koanf:"audit_file"`
	MaxConcurrent    int      `koanf:"max_concurrent"`
	RateLimitPerPeer int      `koanf:"rate_limit_per_peer"`
	MaxBodyBytes     int      `koanf:"max_body_bytes"`
	MaxResponseBytes int      `koanf:"max_response_bytes"`
	MaxWaitSeconds   int      `koanf:"max_wait_seconds"`
	CallTimeout      int      `koanf:"call_timeout"`
	TLSCert          string   `koanf:"tls_cert"`
	TLSKey           string   `koanf:"tls_key"`
	FileRoot         string   `koanf:"file_root"`
	// AllowSaveFindings and MaxFindings gate and bound save_findings.
	AllowSaveFindings bool `koanf:"allow_save_findings"`
	MaxFindings       int  `koanf:"max_findings"`
	AllowShutdown     bool `koanf:"allow_shutdown"`
	// AllowTLSCapture gates start_tls_capture (bundles/tls).
	AllowTLSCapture bool `koanf:"allow_tls_capture"`
	// The find_in_captures sweep bounds (sdk.SweepLimits).
	SweepMaxFiles            int `koanf:"sweep_max_files"`
	SweepDeadlineMS          int `koanf:"sweep_deadline_ms"`
	SweepMaxRunning          int `koanf:"sweep_max_running"`
	SweepMaxHeldResults      int `koanf:"sweep_max_held_results"`
	SweepResultRetentionSecs int `koanf:"sweep_result_retention_secs"`
	// Bundles are the custom bundles of [mcp.bundles]: name = [members].
	Bundles map[string][]string `koanf:"bundles"`
}

// settingsFields maps every leaf key of Settings (dotted koanf tags) to its
// field's index path; the free sections (mcp.bundles, bundles) are leaves.
var settingsFields = func() map[string][]int {
	out := map[string][]int{}
	var walk func(t reflect.Type, prefix string, idx []int)
	walk = func(t reflect.Type, prefix string, idx []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := prefix + f.Tag.Get("koanf")
			path := append(append([]int(nil), idx...), i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, key+".", path)
				continue
			}
			out[key] = path
		}
	}
	walk(reflect.TypeOf(Settings{}), "", nil)
	return out
}()

// kindOf is the kind of a Settings leaf: what a config file, a variable or
// a flag must give for it.
func kindOf(key string) (kind, error) {
	path, ok := settingsFields[key]
	if !ok {
		return 0, fmt.Errorf("no Settings field has the key %q", key)
	}
	t := reflect.TypeOf(Settings{}).FieldByIndex(path).Type
	switch t.Kind() {
	case reflect.Bool:
		return kBool, nil
	case reflect.Int:
		return kInt, nil
	case reflect.Float64:
		return kFloat, nil
	case reflect.String:
		return kString, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return kStrings, nil
		}
	}
	return 0, fmt.Errorf("Settings field %q has type %v, not an option type", key, t)
}

// splitLists splits the comma-separated entries of every string-list field
// (--mcp-tools core,lint_dialog is two entries), trimming each.
func (s *Settings) splitLists() {
	v := reflect.ValueOf(s).Elem()
	for key, path := range settingsFields {
		f := v.FieldByIndex(path)
		if f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String && !strings.Contains(key, "bundles") {
			f.Set(reflect.ValueOf(splitList(f.Interface().([]string))))
		}
	}
}

// value is the field of a Settings key (settingsFields), as its Go type.
func (s *Settings) value(key string) any {
	path, ok := settingsFields[key]
	if !ok {
		panic("host: no setting " + key)
	}
	return reflect.ValueOf(s).Elem().FieldByIndex(path).Interface()
}
