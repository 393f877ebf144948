#!/usr/bin/env bash
# govulncheck over the module, against a pinned snapshot of the Go vulnerability database.
#
# CI cannot reach vuln.go.dev, but the Go module proxy serves golang.org/x/vulndb, whose
# data/osv holds every report as OSV JSON. This builds the database govulncheck reads from that
# module with the module's own generator (cmd/gendb), then scans. To take newer reports, set
# VULNDB_VERSION to a newer pseudo-version of golang.org/x/vulndb (`go list -m -versions` does
# not list pseudo-versions: `go list -m golang.org/x/vulndb@master` names the newest). Where
# vuln.go.dev can be reached, VULNCHECK_DB=https://vuln.go.dev skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."

VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
GOVULNCHECK_VERSION=v1.9.0

db=${VULNCHECK_DB:-}
if [ -z "$db" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  src=$(go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | jq -r .Dir)
  cp -r "$src" "$work/vulndb"
  chmod -R u+w "$work/vulndb"
  # gendb dates each report by the commit that last touched it: one commit, dated as the
  # snapshot (the pseudo-version's timestamp), so the database is the same on every run.
  stamp=${VULNDB_VERSION#v0.0.0-}
  stamp=${stamp%%-*}
  date="${stamp:0:4}-${stamp:4:2}-${stamp:6:2}T${stamp:8:2}:${stamp:10:2}:${stamp:12:2}Z"
  (
    cd "$work/vulndb"
    git init -q
    git add data/osv
    GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
      git -c user.name=vulncheck -c user.email=vulncheck@localhost commit -q -m "golang.org/x/vulndb@$VULNDB_VERSION"
    go run ./cmd/gendb -repo . -out "$work/db" 2>&1 | grep -v '^go: downloading' || true
  )
  test -s "$work/db/index/modules.json" || { echo "vulncheck: the database was not built" >&2; exit 1; }
  db="file://$work/db"
fi

echo "govulncheck $GOVULNCHECK_VERSION, $(go version | cut -d' ' -f3), database $db (golang.org/x/vulndb@$VULNDB_VERSION)"
go run "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION" -db "$db" ./...
