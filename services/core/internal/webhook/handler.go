package webhook

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/metrics"
)

// Processor decides the alerts of one message (the pipeline).
type Processor interface {
	Process(ctx context.Context, m Message) ([]store.AlertDecision, error)
}

// FromStore converts a recorded decision.
func FromStore(d store.AlertDecision) api.AlertDecision {
	return api.AlertDecision{Fingerprint: d.Fingerprint, Alertname: d.Alertname, Status: d.Status, Decision: d.Decision,
		Agent: d.Agent, InvestigationID: d.InvestigationID, Reason: d.Reason}
}

// Handler serves POST /api/v1/alerts. It answers as soon as every alert is
// decided and recorded; dispatch runs in the background. 400 for bodies
// Alertmanager must not retry, 413 over maxBody bytes (WEBHOOK_MAX_BYTES),
// 500 when a decision could not be recorded (Alertmanager retries).
func Handler(p Processor, log *zap.Logger, m *metrics.Metrics, maxBody int64) http.Handler {
	if log == nil {
		log = zap.NewNop()
	}
	if m == nil {
		m = metrics.New(nil)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := serve(w, r, p, log, maxBody)
		m.WebhookRequests.WithLabelValues(strconv.Itoa(code)).Inc()
		m.WebhookDuration.Observe(time.Since(start).Seconds())
	})
}

func serve(w http.ResponseWriter, r *http.Request, p Processor, log *zap.Logger, maxBody int64) int {
	msg, err := Decode(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tl *TooLargeError
		var br *BadRequestError
		switch {
		case errors.As(err, &tl):
			return writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": err.Error()})
		case errors.As(err, &br):
			log.Debug("webhook rejected", zap.Error(err))
			return writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		default:
			return writeJSON(w, http.StatusBadRequest, map[string]string{"error": "read body: " + err.Error()})
		}
	}
	ds, err := p.Process(r.Context(), msg)
	if err != nil {
		log.Error("webhook: decision not recorded, answering 500 so Alertmanager retries",
			zap.String("group_key", msg.GroupKey), zap.Int("alerts", len(msg.Alerts)), zap.Int("recorded", len(ds)), zap.Error(err))
		return writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
	ans := api.AlertsAnswer{Decisions: make([]api.AlertDecision, len(ds))}
	for i, d := range ds {
		ans.Decisions[i] = FromStore(d)
	}
	return writeJSON(w, http.StatusOK, ans)
}

func writeJSON(w http.ResponseWriter, code int, v any) int {
	api.WriteJSON(w, code, v)
	return code
}
