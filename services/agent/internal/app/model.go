package app

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// modelClient builds the model client from the LLM_* settings: nil (and
// "none") in deterministic mode. Its requests are counted in metrics.
func (a *App) modelClient(metrics *engine.Metrics, log *zap.Logger) (engine.Model, *llm.Client, string, error) {
	cfg := a.Config
	if cfg.Deterministic() {
		return nil, nil, "none", nil
	}
	eps := []llm.Endpoint{{Name: "primary", BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.Model}}
	if fb := cfg.LLMFallbackBaseURL; fb != "" {
		fm := cfg.LLMFallbackModel
		if fm == "" {
			fm = cfg.Model
		}
		eps = append(eps, llm.Endpoint{Name: "fallback", BaseURL: fb, APIKey: cfg.LLMFallbackAPIKey, Model: fm})
	}
	c, err := llm.New(llm.Config{
		Endpoints: eps, Timeout: cfg.LLMTimeout, Temperature: float32(cfg.Temperature),
		MaxCompletionTokens: cfg.MaxAnswerTokens,
		Logger:              log.Named("llm"),
		Observe: func(endpoint, outcome string, _ time.Duration) {
			metrics.ObserveModel(endpoint, outcome)
		},
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("model client: %w", err)
	}
	var names []string
	for _, e := range c.Endpoints() {
		names = append(names, e.Name)
	}
	metrics.InitModel(names, []string{llm.OutcomeOK, llm.KindTimeout, llm.KindConnection, llm.KindHTTP5xx, llm.KindRateLimited})
	return llmModel{c}, c, cfg.Model, nil
}

// llmModel adapts the llm client to the engine's Model.
type llmModel struct{ c *llm.Client }

func (m llmModel) Chat(ctx context.Context, req openaiRequest) (openaiResponse, string, error) {
	resp, err := m.c.Chat(ctx, req)
	if err != nil {
		return openaiResponse{}, "", err
	}
	return resp.ChatCompletionResponse, resp.Endpoint, nil
}
