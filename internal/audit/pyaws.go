package audit

import (
	"strconv"
	"time"
)

// botoModules are the packages whose clients are built with
// .client("bedrock-runtime", …): boto3, botocore and aioboto3.
var botoModules = map[string]bool{"boto3": true, "botocore": true, "aioboto3": true}

// bedrockService is the service name of AWS Bedrock's runtime API.
const bedrockService = "bedrock-runtime"

// importsBoto reports whether the file imports boto3, botocore or aioboto3.
func (f *pyFile) importsBoto() bool {
	for i := range f.toks {
		if f.stmtStart(i) && (f.is(i, "import") || f.is(i, "from")) && botoModules[f.text(i+1)] {
			return true
		}
	}
	return false
}

// botoClient reports whether the name at i is the method of a
// session.client("bedrock-runtime", …), boto3.client(…) or
// session.create_client(…) call.
func (f *pyFile) botoClient(i int) bool {
	if !f.is(i-1, ".") || f.text(i) != "client" && f.text(i) != "create_client" || !f.is(i+1, "(") {
		return false
	}
	end := f.closer(i + 1)
	if end < 0 {
		return false
	}
	args := f.split(i+1, end)
	if len(args) == 0 {
		return false
	}
	a := args[0]
	if f.text(a.from) == "service_name" && f.is(a.from+1, "=") {
		a.from += 2
	} else if f.is(a.from+1, "=") {
		if v := f.callArgs(i+1, end, 0).get("service_name"); v.kind == vOther {
			a = v.sp
		}
	}
	return a.to-a.from == 1 && f.toks[a.from].kind == tStr && !isFString(f.toks[a.from].text) && unquote(f.toks[a.from].text) == bedrockService
}

// bedrock returns the findings for the bedrock-runtime client built by the
// call whose method name is at i. botocore makes 5 attempts in legacy mode
// (its default) and 3 in standard or adaptive mode unless the config's
// retries say otherwise — max_attempts counting retries,
// total_max_attempts attempts — and waits up to read_timeout (60 s by
// default) per read.
func (f *pyFile) bedrock(i int) []issue {
	end := f.closer(i + 1)
	line, call := f.toks[i].line, f.text(i)+"(\""+bedrockService+"\", …)"
	client := "boto3.client"
	cfg := f.botoConfig(f.callArgs(i+1, end, 0).get("config"), 0)
	is := issue{line: line, client: client, call: call, words: &awsPython}
	var retries []issue
	switch r := cfg.get("retries"); r.kind {
	case vUnset, vNull:
		is.problem, is.sends = pRetries, "5"
		retries = append(retries, is)
	case vOther:
		rs := f.spread(r.sp, 0)
		total, max := rs.get("total_max_attempts"), rs.get("max_attempts")
		switch {
		case total.kind == vNum:
			if total.num > 1 {
				is.problem, is.retries, is.sends = pRetriesOn, "total_max_attempts="+total.text, attempts(total)
				retries = append(retries, is)
			}
		case total.kind != vUnset:
		case max.kind == vNum:
			if max.num > 0 {
				is.problem, is.retries, is.sends = pRetriesOn, "max_attempts="+max.text+" (retries, after the first attempt)", attempts(value{num: max.num + 1})
				retries = append(retries, is)
			}
		case max.kind == vUnset:
			is.problem, is.sends = pRetries, "5"
			if m := rs.get("mode"); m.kind == vOther && m.sp.to-m.sp.from == 1 {
				switch unquote(f.text(m.sp.from)) {
				case "standard", "adaptive":
					is.sends = "3"
				}
			}
			retries = append(retries, is)
		}
	}
	return cloudIssues(line, client, call, retries, cfg.get("read_timeout"), false, time.Second, &awsPython)
}

// botoConfig returns the settings a config= argument carries: a Config(…)
// call (botocore.config.Config, any import path), or a name bound once to
// one; nothing for None or no argument; anything for the rest.
func (f *pyFile) botoConfig(v value, nest int) options {
	sp, nest, out, done := f.settingsValue(v, nest)
	if done {
		return out
	}
	unknown := options{{key: ""}}
	root, open := f.dotted(sp.from)
	if root == "" || f.text(open-1) != "Config" || !f.is(open, "(") || f.closer(open) != sp.to-1 {
		return unknown
	}
	return f.callArgs(open, sp.to-1, nest+1)
}

// settingsValue returns the tokens of a value that carries settings (a
// config= or http_options= argument), following a name bound once to its
// value, and the nesting they are read at; done, with the settings to
// give, when there is nothing to read: none for None or no argument,
// anything for what cannot be read.
func (f *pyFile) settingsValue(v value, nest int) (sp span, at int, out options, done bool) {
	unknown := options{{key: ""}}
	switch v.kind {
	case vUnset, vNull:
		return span{}, nest, nil, true
	case vUnknown:
		return span{}, nest, unknown, true
	}
	sp = v.sp
	if nest >= maxNest || sp.to <= sp.from {
		return span{}, nest, unknown, true
	}
	if sp.to-sp.from == 1 && f.name(sp.from) {
		if bound, ok := f.resolve(f.text(sp.from)); ok {
			return f.settingsValue(f.value(bound, nest+1), nest+1)
		}
		return span{}, nest, unknown, true
	}
	return sp, nest, nil, false
}

// retryAttempts returns the attempts a google-genai retry_options value
// allows: unset for none (None, or no retry_options), the SDK's default of
// 5 for options that do not say, unknown for options it cannot read.
func (f *pyFile) retryAttempts(v value, nest int) value {
	switch v.kind {
	case vUnset, vNull, vUnknown:
		return v
	}
	sp := v.sp
	if nest >= maxNest || sp.to <= sp.from {
		return value{kind: vUnknown}
	}
	var ro options
	root, open := f.dotted(sp.from)
	switch {
	case sp.to-sp.from == 1 && f.name(sp.from):
		bound, ok := f.resolve(f.text(sp.from))
		if !ok {
			return value{kind: vUnknown}
		}
		return f.retryAttempts(f.value(bound, nest+1), nest+1)
	case f.is(sp.from, "{") && f.closer(sp.from) == sp.to-1:
		ro = f.dictLiteral(sp.from, sp.to-1, nest+1)
	case root != "" && f.is(open, "(") && f.closer(open) == sp.to-1 &&
		(f.text(open-1) == "HttpRetryOptions" || f.text(open-1) == "HttpRetryOptionsDict" || f.text(open-1) == "dict"):
		ro = f.callArgs(open, sp.to-1, nest+1)
	default:
		return value{kind: vUnknown}
	}
	a := ro.get("attempts")
	if a.kind == vUnset || a.kind == vNull {
		return value{kind: vNum, num: 5, text: strconv.Itoa(5) + " (the default once retry_options is given)"}
	}
	return a
}
