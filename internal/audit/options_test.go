package audit

import "testing"

func TestOptionsGet(t *testing.T) {
	zero := value{kind: vNum, num: 0, text: "0"}
	three := value{kind: vNum, num: 3, text: "3"}
	unknown := value{kind: vUnknown}
	tests := []struct {
		name string
		opts options
		want value
	}{
		{"unset", nil, value{}},
		{"set", options{{key: "r", val: zero}}, zero},
		{"later wins", options{{key: "r", val: zero}, {key: "r", val: three}}, three},
		{"spread after", options{{key: "r", val: zero}, {key: ""}}, unknown},
		{"spread before", options{{key: ""}, {key: "r", val: three}}, three},
		{"explicit beats spread", options{{key: "r", val: zero, explicit: true}, {key: ""}}, zero},
		{"other key", options{{key: "t", val: three}}, value{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.opts.get("r"); got != tt.want {
				t.Errorf("get = %+v, want %+v", got, tt.want)
			}
			for _, e := range tt.opts {
				if e.explicit {
					return // compact is for spread settings only
				}
			}
			c := tt.opts.compact()
			for _, key := range []string{"r", "t", "x"} {
				if c.get(key) != tt.opts.get(key) {
					t.Errorf("compact changed %q: %+v → %+v", key, tt.opts, c)
				}
			}
		})
	}
}

func TestCompactBounded(t *testing.T) {
	var o options
	for i := 0; i < 100; i++ {
		o = append(o, event{key: "a"}, event{key: "b"}, event{key: ""}, event{key: "a"})
	}
	if c := o.compact(); len(c) != 2 || c[0].key != "" || c[1].key != "a" {
		t.Errorf("compact = %+v, want [\"\" a]", c)
	}
}

func TestCalls(t *testing.T) {
	for in, want := range map[string]string{"2": "3", "0x10": "17", "1_0": "11", "-1": "", "2.5": "", "x": ""} {
		if got := calls(in); got != want {
			t.Errorf("calls(%q) = %q, want %q", in, got, want)
		}
	}
}
