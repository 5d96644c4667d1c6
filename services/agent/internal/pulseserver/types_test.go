package pulseserver_test

import openai "github.com/sashabaranov/go-openai"

type (
	openaiReq  = openai.ChatCompletionRequest
	openaiResp = openai.ChatCompletionResponse
)
