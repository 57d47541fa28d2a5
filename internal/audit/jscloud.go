package audit

import "time"

// genai returns the findings for a new GoogleGenAI(…) at i built with opts.
// The SDK retries nothing unless httpOptions.retryOptions is given (then
// 5 attempts unless its attempts says otherwise), and has no timeout
// unless httpOptions.timeout (milliseconds) is given.
func (f *jsFile) genai(i int, opts options) []issue {
	var timeout, retry value
	switch h := opts.get("httpOptions"); h.kind {
	case vUnset, vNull:
	case vUnknown:
		timeout, retry = h, h
	default:
		http := f.argument(h.sp, 0)
		timeout, retry = http.get("timeout"), f.retryAttempts(http.get("retryOptions"))
	}
	line, call := f.toks[i].line, "new GoogleGenAI(…)"
	return cloudIssues(line, "GoogleGenAI", call, attemptsIssue(line, "GoogleGenAI", call, retry, "", &genaiJS), timeout, true, time.Millisecond, &genaiJS)
}

// retryAttempts returns the attempts a retryOptions value allows: unset
// for none (null, undefined, or no retryOptions), the SDK's default of 5
// for options that do not say, unknown for options it cannot read.
func (f *jsFile) retryAttempts(v value) value {
	switch v.kind {
	case vUnset, vNull, vUnknown:
		return v
	}
	a := f.argument(v.sp, 0).get("attempts")
	if a.kind == vUnset || a.kind == vNull {
		return value{kind: vNum, num: 5, text: "5 (the default once retryOptions is given)"}
	}
	return a
}

// bedrock returns the findings for a new BedrockRuntimeClient(…) (or
// BedrockRuntime) at i built with opts. The AWS SDK for JavaScript makes
// 3 attempts unless maxAttempts (or a retryStrategy) says otherwise, and
// its request handler has no request timeout unless requestHandler gives
// one: an options object or a new NodeHttpHandler(…) / NodeHttp2Handler(…)
// with requestTimeout (milliseconds).
func (f *jsFile) bedrock(i int, class string, opts options) []issue {
	line, call := f.toks[i].line, "new "+class+"(…)"
	retries := opts.get("maxAttempts")
	if s := opts.get("retryStrategy"); retries.kind == vUnset && s.kind != vUnset && s.kind != vNull {
		retries = value{kind: vOther} // a strategy of its own: its attempts are not read
	}
	var timeout value
	switch h := opts.get("requestHandler"); h.kind {
	case vUnset, vNull:
	case vUnknown:
		timeout = h
	default:
		timeout = f.handlerTimeout(h.sp, 0)
	}
	if timeout.kind == vNum && timeout.num == 0 {
		timeout = value{} // 0 is no timeout
	}
	return cloudIssues(line, class, call, attemptsIssue(line, class, call, retries, "3", &awsJS), timeout, true, time.Millisecond, &awsJS)
}

// handlerTimeout returns the requestTimeout a requestHandler expression
// gives: an options object, new NodeHttpHandler(options) or
// new NodeHttp2Handler(options) (or their .create(options)), or a name
// bound once to one of those; anything else is a handler of one's own,
// taken as set.
func (f *jsFile) handlerTimeout(sp span, nest int) value {
	set := value{kind: vOther}
	sp = f.trimCast(sp)
	if nest >= maxNest || sp.to <= sp.from {
		return set
	}
	if f.is(sp.from, "{") && f.closer(sp.from) == sp.to-1 {
		return f.argument(sp, nest+1).get("requestTimeout")
	}
	if sp.to-sp.from == 1 && f.name(sp.from) {
		if bound, ok := f.resolve(f.text(sp.from), sp.from); ok {
			return f.handlerTimeout(bound, nest+1)
		}
		return set
	}
	// new [ns.]NodeHttpHandler(…) or [ns.]NodeHttpHandler.create(…)
	open := -1
	for k := sp.from; k < sp.to; k++ {
		if f.is(k, "(") {
			open = k
			break
		}
	}
	if open < 0 || f.closer(open) != sp.to-1 {
		return set
	}
	name := f.text(open - 1)
	if name == "create" && f.is(open-2, ".") {
		name = f.text(open - 3)
	}
	if name != "NodeHttpHandler" && name != "NodeHttp2Handler" {
		return set
	}
	args := f.split(open, sp.to-1)
	if len(args) == 0 {
		return value{}
	}
	if f.is(args[0].from, "{") || args[0].to-args[0].from == 1 && f.name(args[0].from) {
		return f.argument(args[0], nest+1).get("requestTimeout")
	}
	return set
}
