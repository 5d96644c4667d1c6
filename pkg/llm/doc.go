// Package llm is the model client: one OpenAI-compatible chat call with a
// per-attempt timeout and an ordered list of fallback endpoints.
//
// It wraps github.com/sashabaranov/go-openai and works against any
// OpenAI-compatible endpoint (OpenAI, Azure's v1 surface, Ollama, vLLM, an AI
// gateway). The rules it enforces come from production failures:
//
//   - A hang is a failure. Every attempt runs under its own Config.Timeout
//     (LLM_TIMEOUT). A saturated node often accepts the connection and holds
//     it without ever answering 5xx or 429; that timeout is a failover
//     trigger exactly like a 5xx. The caller's context still bounds the call.
//
//   - max_retries=1. A call makes at most ONE extra request beyond "each
//     endpoint once", and never re-sends to an endpoint that timed out, was
//     rate limited or answered 5xx: a gateway already fails over internally,
//     and a client-side retry of a saturated gateway multiplies latency
//     (400 s × 3 = 1200 s in the field) without adding resilience. The one
//     extra request is spent only on (a) a connection error (refused, reset,
//     closed) at the LAST endpoint, which costs milliseconds, not a timeout,
//     or (b) re-sending once without temperature to an endpoint that
//     rejected the temperature parameter with 400. So the worst case of a
//     call is (len(Endpoints)+1) × Timeout; Client.MaxCallDuration reports
//     it so callers can order their own timeouts at start.
//
//   - Retry-After is honoured. A 429 (or 503) naming a wait (Retry-After
//     in seconds or as a date, Azure's retry-after-ms) spends the one extra
//     request on waiting it and asking the same endpoint again, before any
//     failover — when the attempt and the wait together fit in Timeout and
//     the wait takes at most half of what is left of the caller's deadline.
//     Otherwise the call fails over at once, and the error says why it did
//     not wait (a daily quota's "Retry-After: 86400" is never waited).
//
//   - Structured output falls back per endpoint: a server that refuses the
//     request's response_format (a 4xx or 5xx about response_format, JSON
//     schemas or grammars — format.go lists what servers send) gets it
//     again with json_object, then with none; the schema moves into the
//     system message as an instruction, and the endpoint keeps the level it
//     accepted. The caller parses JSON out of prose at the last level.
//
//   - Reasoning text is handed over, not mixed in: a "reasoning" field
//     (Ollama, vLLM from 0.11) is moved to ReasoningContent, where
//     reasoning_content (vLLM before 0.11, llama.cpp, DeepSeek) already is.
//     Inline <think> tags in content are left to the caller.
//
//   - Answers are read as servers send them (shapes.go): tool-call
//     arguments as a JSON object (llama.cpp) become the string OpenAI sends,
//     the exact bytes kept; a tool call without an id gets one; a legacy
//     function_call becomes a tool call. An empty choices list, an error
//     object in a 200 body and arguments neither object nor string are
//     invalid responses naming the quirk.
//
//   - Failover triggers: timeout, connection error, HTTP 5xx, HTTP 429, an
//     HTML page instead of JSON (a proxy's "502 Bad Gateway" page, seen both
//     with status 502 and inside 200 answers), and an answer that is not a
//     chat completion. Each endpoint is tried once, in order.
//
//   - Configuration errors fail fast and say what to fix: 401/403
//     ("authentication failed … check LLM_API_KEY"), 404 ("model or path not
//     found … check LLM_BASE_URL (should end in /v1) and AGENT_MODEL"), other
//     4xx such as 400. No fallback is tried: it would hide the mistake.
//
// Errors are typed: every failed attempt is an *Error (Endpoint, Status,
// Kind, Msg); when more than one attempt failed, Chat returns an
// *AttemptsError listing each one, and errors.As finds the *Error inside.
//
// Temperature is sent explicitly, 0 by default. go-openai drops a zero
// temperature from the JSON (omitempty), which would let the server apply
// its own default (often 0.7–1.0), so the client splices "temperature":0
// into the request body on the wire. An endpoint that answers 400 naming
// temperature (reasoning models accept only their default) gets the request
// once more without it, and is remembered as such for the client's lifetime.
//
// The request's Model is always set per endpoint; callers leave it empty.
// Token usage is in Response.Usage. API keys are sent as
// "Authorization: Bearer <key>" and never logged: Endpoint redacts its key
// in fmt and zap output, and error messages have the key replaced should a
// server echo it back.
//
// Tests run on the wire against llmtest, a scripted OpenAI-compatible HTTP
// server, never against an interface stub.
package llm
