// Command bareecho is the yardstick of the HTTP load test: a bare net/http handler that only
// decodes a /v1/matchmake body into typed structs and encodes it back. Whatever the service
// does beyond that (routing, middleware, validation, matchmaking, a bigger response) is what
// the load test's ratio measures.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
)

type player struct {
	ID     string   `json:"id"`
	Rating *float64 `json:"rating,omitempty"`
}

type request struct {
	Players  []player `json:"players"`
	TeamSize *int     `json:"team_size,omitempty"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	flag.Parse()
	http.HandleFunc("POST /v1/matchmake", func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(req)
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
