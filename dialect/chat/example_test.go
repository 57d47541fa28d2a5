package chat_test

import (
	"fmt"

	"github.com/sluice-llm/sluice/dialect/chat"
)

// An OpenAI client's request, answered by Anthropic: the request written
// for Anthropic, and what Anthropic cannot take named.
func Example() {
	body := []byte(`{"model":"claude-haiku-4-5","max_tokens":50,
		"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Paris?"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
		"tool_choice":"required"}`)
	r, err := chat.OpenAI.DecodeRequest(body)
	if err != nil {
		panic(err)
	}
	out, err := chat.Anthropic.EncodeRequest(r)
	fmt.Printf("%s %v\n", out, err)

	r.Temperature = new(float64)
	*r.Temperature = 1.7
	_, err = chat.Anthropic.EncodeRequest(r)
	fmt.Println(err)
	// Output:
	// {"model":"claude-haiku-4-5","max_tokens":50,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}} <nil>
	// chat: Anthropic cannot take temperature 1.7 (it takes 0 to 1)
}

// An Anthropic stream read event by event and written as an OpenAI
// client's, with the usage chunk it asked for.
func ExampleStreamEncoder() {
	upstream := []chat.Frame{
		{Event: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":9,"cache_read_input_tokens":1000,"output_tokens":1}}}`)},
		{Event: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`)},
		{Event: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`)},
		{Event: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`)},
		{Event: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
		{Event: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}`)},
		{Event: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
	}
	dec := chat.Anthropic.NewStreamDecoder()
	enc := chat.OpenAI.NewStreamEncoder(&chat.Request{Stream: true, IncludeUsage: true})
	var events []chat.Event
	var frames []chat.Frame
	for _, f := range upstream {
		events, _ = dec.Decode(events[:0], f)
		for _, ev := range events {
			frames, _ = enc.Encode(frames[:0], ev)
			for _, out := range frames {
				fmt.Printf("data: %s\n", out.Data)
			}
		}
	}
	// Output:
	// data: {"id":"msg_1","object":"chat.completion.chunk","created":0,"model":"claude-haiku-4-5","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}
	// data: {"id":"msg_1","object":"chat.completion.chunk","created":0,"model":"claude-haiku-4-5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}
	// data: {"id":"msg_1","object":"chat.completion.chunk","created":0,"model":"claude-haiku-4-5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"logprobs":null,"finish_reason":null}]}
	// data: {"id":"msg_1","object":"chat.completion.chunk","created":0,"model":"claude-haiku-4-5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}
	// data: {"id":"msg_1","object":"chat.completion.chunk","created":0,"model":"claude-haiku-4-5","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}
	// data: {"id":"msg_1","object":"chat.completion.chunk","created":0,"model":"claude-haiku-4-5","choices":[],"usage":{"prompt_tokens":1009,"completion_tokens":12,"total_tokens":1021,"prompt_tokens_details":{"cached_tokens":1000}}}
	// data: [DONE]
}
