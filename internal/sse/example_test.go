package sse_test

import (
	"fmt"

	"github.com/sluice-llm/sluice/internal/sse"
)

func ExampleParser() {
	var p sse.Parser
	chunks := []string{"event: message_start\ndata: {\"a\"", ":1}\n\ndata: [DONE]\n", "\n"}
	for _, c := range chunks {
		p.Feed([]byte(c), func(e sse.Event) bool {
			fmt.Printf("%q %s done=%v\n", e.Type, e.Data, sse.IsDone(e.Data))
			return true
		})
	}
	fmt.Println(p.Events(), p.Bytes(), p.Pending())
	// Output:
	// "message_start" {"a":1} done=false
	// "" [DONE] done=true
	// 2 50 false
}

func ExampleAppendEvent() {
	b := sse.AppendComment(nil, "keep-alive")
	b = sse.AppendEvent(b, "error", []byte(`{"type":"error"}`))
	fmt.Printf("%s", b)
	// Output:
	// : keep-alive
	// event: error
	// data: {"type":"error"}
}
