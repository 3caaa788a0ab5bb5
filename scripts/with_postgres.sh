#!/usr/bin/env bash
# Runs a command next to a throwaway PostgreSQL server, for the tests of the shared tuning
# database (tests/tuner/postgres_test.cpp):
#   scripts/with_postgres.sh ctest -L tuner
# initdb's a cluster in a fresh temporary folder, starts it on a free localhost port (no other
# socket: its Unix socket lives in that folder too), creates the database tessera_test, exports
#   TESSERA_TEST_POSTGRES_URL=postgresql://tessera@127.0.0.1:PORT/tessera_test
#   TESSERA_TEST_POSTGRES_RESTART=FOLDER/restart.sh   (restarts the server, same options)
# runs the command, and always stops the server and removes the folder, whatever the command
# did. Exits with the command's status. The server binaries come from Debian's postgresql
# package (scripts/setup.sh); PG_BIN overrides where they are looked for.
# PostgreSQL refuses to run as root: as root the server runs as the postgres user.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

pg_bin=${PG_BIN:-}
if [ -z "$pg_bin" ]; then
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && pg_bin=$d
  done
fi
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  echo "error: no PostgreSQL server binaries (install Debian's postgresql package, or set PG_BIN)" >&2
  exit 1
fi

as_server_user=()
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "error: running as root and there is no postgres user to run the server as" >&2
    exit 1
  fi
  as_server_user=(runuser -u postgres --)
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera_pg.XXXXXX")
chmod 755 "$dir"
[ ${#as_server_user[@]} -gt 0 ] && chown postgres "$dir"
data=$dir/data
started=0

cleanup() {
  if [ "$started" -eq 1 ]; then
    "${as_server_user[@]}" "$pg_bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port: the kernel picks one for a socket bound to port 0.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"${as_server_user[@]}" "$pg_bin/initdb" -D "$data" -U tessera --auth=trust -E UTF8 \
  --no-locale >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
# fsync off: a throwaway test server need not survive a power cut.
if ! "${as_server_user[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100" \
    start >/dev/null; then
  cat "$dir/server.log" >&2
  exit 1
fi
started=1
"${as_server_user[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$port" -U tessera tessera_test

export TESSERA_TEST_POSTGRES_URL="postgresql://tessera@127.0.0.1:$port/tessera_test"
# The fault tests restart the server under running tuners: this script does it (same options).
cat >"$dir/restart.sh" <<EOF
#!/usr/bin/env bash
exec ${as_server_user[*]} "$pg_bin/pg_ctl" -D "$data" -l "$dir/server.log" -m fast -w -t 60 restart
EOF
chmod 755 "$dir/restart.sh"
export TESSERA_TEST_POSTGRES_RESTART="$dir/restart.sh"
echo "with_postgres: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') at 127.0.0.1:$port"
status=0
"$@" || status=$?
exit "$status"
