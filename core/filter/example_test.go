package filter_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sipnab/sipnab/core/filter"
)

func ExampleCompile() {
	f, err := filter.Compile(`problems and method == INVITE and ua =~ '(?i)asterisk'`, filter.DefaultThresholds())
	if err != nil {
		panic(err)
	}
	rec := (&filter.MemRecord{}).
		SetStr(filter.FieldMethod, "INVITE").
		SetStr(filter.FieldUA, "Asterisk PBX 18").
		SetStr(filter.FieldState, "Failed")
	fmt.Println(f.Match(rec))
	fmt.Println(f.String())
	// Output:
	// true
	// problems and method == INVITE and ua =~ "(?i)asterisk"
}

func ExampleError() {
	_, err := filter.Compile("from_user == alice", filter.DefaultThresholds())
	var pe *filter.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Pos, pe.Msg)
		fmt.Println(pe.Caret)
		fmt.Println(pe.Hint)
	}
	// Output:
	// 0 unknown field "from_user"
	// from_user == alice
	// ^
	// did you mean from.user?
}

func ExampleExpandAlias() {
	th := filter.DefaultThresholds()
	th.PDDSeconds = 6
	s, _ := filter.ExpandAlias("slow-setup", th)
	fmt.Println(s)
	s, _ = filter.ExpandAlias("short-calls", th)
	fmt.Println(s)
	// Output:
	// pdd > 6
	// state == Completed and duration < 3
}

// TestConcurrentMatch shares one compiled filter between goroutines (run
// under -race).
func TestConcurrentMatch(t *testing.T) {
	f, err := filter.Compile(`problems or payload =~ 'BYE' or rtp.ssrc == 0x10`, filter.DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := (&filter.MemRecord{}).Add(filter.FieldPayload, "INVITE", "BYE").Add(filter.FieldRTPSSRC, "0x00000011")
			miss := (&filter.MemRecord{}).Add(filter.FieldPayload, "INVITE").SetNum(filter.FieldPDD, float64(g))
			for range 1000 {
				if !f.Match(rec) || f.Match(miss) {
					t.Error("concurrent match gave a wrong answer")
					return
				}
			}
		}()
	}
	wg.Wait()
}
