package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
)

// The overview's API calls run concurrently inside the page's request,
// whose context carries chi's route context: each call must route with
// its own (sharing one misroutes, or panics inside chi under load, as the
// overview benchmark found).
func TestConcurrentAPICallsRouteOnTheirOwn(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	r.Get("/api/v1/items/{id}", func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(w, "%q", chi.URLParam(req, "id"))
	})
	r.Get("/api/v1/other/{name}/{id}", func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(w, "%q", chi.URLParam(req, "name")+"/"+chi.URLParam(req, "id"))
	})
	c := apiClient{h: r}
	page := context.WithValue(context.Background(), chi.RouteCtxKey, chi.NewRouteContext())
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 400 {
		wg.Go(func() {
			path, want := fmt.Sprintf("/api/v1/items/%d", i), fmt.Sprint(i)
			if i%2 == 1 {
				path, want = fmt.Sprintf("/api/v1/other/n%d/%d", i, i), fmt.Sprintf("n%d/%d", i, i)
			}
			var got string
			if err := c.get(page, path, nil, &got); err != nil || got != want {
				errs <- fmt.Errorf("GET %s = %q, %v; want %q", path, got, err, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
