#!/usr/bin/env bash
# Real backend servers for the tests, on loopback only.
#
#   bash scripts/backends.sh up       install what is missing (Debian packages), start every server
#                                     that is not already answering on its standard port, wait until
#                                     each answers, and write the test URLs to .backends/urls.json
#   bash scripts/backends.sh down     stop the servers this script started (by their recorded PIDs)
#   bash scripts/backends.sh status   show each URL and whether it answers
#
# Idempotent: a server already answering on its port (this machine starts PostgreSQL, MariaDB and
# Redis before work begins) is used as it is. Fails, naming the server, when one cannot be started:
# the tests never skip a backend that is missing.
#
# Besides the plain ZooKeeper there is a second one, "zookeeper-tls": TLS on 127.0.0.1:2281 with
# client certificates required (a CA and certificates made at its start by scripts/zookeeper-tls.mjs,
# which the tests' private TLS servers use too; kept in /tmp/rollcall-zookeeper-tls-2281, where every
# checkout finds them), and a plain port 2182 bound to :: so that IPv6
# clients ([::1]:2182) and IPv4 ones reach it. urls.json gets its URLs and the client's PEM files:
# zookeeper-tls, zookeeper-tls-ca, -certfile, -keyfile, -other-ca (a CA that signed nothing), and
# zookeeper-ipv6.
#
# ROLLCALL_BACKENDS_DIR (default .backends), ROLLCALL_ZK_TLS_DIR and the *_PORT variables below may be set, to try the
# script beside running servers; the tests read .backends/urls.json only.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE="${ROLLCALL_BACKENDS_DIR:-$PWD/.backends}"
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd -P) # the files urls.json names stay valid wherever it is read from

REDIS_PORT=${REDIS_PORT:-6379}
MEMCACHED_PORT=${MEMCACHED_PORT:-11211}
ZOOKEEPER_PORT=${ZOOKEEPER_PORT:-2181}
ZOOKEEPER_TLS_PORT=${ZOOKEEPER_TLS_PORT:-2281}
ZOOKEEPER_IPV6_PORT=${ZOOKEEPER_IPV6_PORT:-2182}
ETCD_PORT=${ETCD_PORT:-2379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-2380}
PG_PORT=${PG_PORT:-5432}
MYSQL_PORT=${MYSQL_PORT:-3306}

PACKAGES=(redis-server memcached zookeeper etcd-server etcd-client postgresql mariadb-server
  python3-tooz python3-pymemcache python3-kazoo python3-etcd3gw python3-psycopg2 python3-pymysql
  python3-redis python3-msgpack chromium librsvg2-bin openssl libnetty-java)

log() { printf 'backends: %s\n' "$*" >&2; }

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  local sudo=''
  [ "$(id -u)" -eq 0 ] || sudo='sudo'
  $sudo apt-get update -qq
  # policy-rc.d keeps Debian from starting the services itself; this script starts them.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # name, check-command...
  local name=$1; shift
  for _ in $(seq 1 120); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "$name did not answer within 60 s; see $STATE/$name.log"
  [ -f "$STATE/$name.log" ] && tail -20 "$STATE/$name.log" >&2
  return 1
}

redis_ok() { [ "$(redis-cli -h 127.0.0.1 -p $REDIS_PORT ping 2>/dev/null)" = PONG ]; }
memcached_ok() { exec 3<>"/dev/tcp/127.0.0.1/$MEMCACHED_PORT" && printf 'version\r\n' >&3 && timeout 2 head -1 <&3 | grep -q VERSION; }
zookeeper_ok() { exec 3<>"/dev/tcp/127.0.0.1/$ZOOKEEPER_PORT" && printf 'srvr' >&3 && timeout 2 cat <&3 | grep -q 'Mode:'; }
# Its certificates live beside the machine's server, not in this checkout: the server on the fixed
# port answers every checkout (a fresh clone must be able to check it and use it, as it uses the
# plain servers), and only the files it was started with verify it.
ZK_TLS_DIR="${ROLLCALL_ZK_TLS_DIR:-${TMPDIR:-/tmp}/rollcall-zookeeper-tls-$ZOOKEEPER_TLS_PORT}"
# Answers srvr over TLS, to the client certificate and CA in urls.json (so they match the server).
zookeeper_tls_ok() {
  printf 'srvr' | timeout 5 openssl s_client -quiet -verify_return_error -connect "127.0.0.1:$ZOOKEEPER_TLS_PORT" \
    -CAfile "$ZK_TLS_DIR/ca.pem" -cert "$ZK_TLS_DIR/client.pem" -key "$ZK_TLS_DIR/client.key" 2>/dev/null | grep -q 'Mode:'
}
zookeeper_ipv6_ok() { exec 3<>"/dev/tcp/::1/$ZOOKEEPER_IPV6_PORT" && printf 'srvr' >&3 && timeout 2 cat <&3 | grep -q 'Mode:'; }
etcd_ok() { curl -fsS "http://127.0.0.1:$ETCD_PORT/version" | grep -q etcdserver; }
pg_ok() { pg_isready -q -h 127.0.0.1 -p $PG_PORT; }
mysql_ok() { mariadb -h 127.0.0.1 -P $MYSQL_PORT -u root -e 'select 1'; }

start_redis() {
  redis_ok >/dev/null 2>&1 && return 0
  log "starting redis on $REDIS_PORT"
  mkdir -p "$STATE/redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port $REDIS_PORT --save '' --appendonly no \
    --dir "$STATE/redis" --logfile "$STATE/redis.log" --pidfile "$STATE/redis.pid"
  wait_for redis redis_ok
}

start_memcached() {
  memcached_ok >/dev/null 2>&1 && return 0
  log "starting memcached on $MEMCACHED_PORT"
  memcached -d -l 127.0.0.1 -p $MEMCACHED_PORT -U 0 -u nobody -m 256 -c 4096 -P "$STATE/memcached.pid"
  wait_for memcached memcached_ok
}

start_zookeeper() {
  zookeeper_ok >/dev/null 2>&1 && return 0
  log "starting zookeeper on $ZOOKEEPER_PORT"
  local dir="$STATE/zookeeper"
  rm -rf "$dir/data"; mkdir -p "$dir/conf" "$dir/data"
  cat > "$dir/conf/zoo.cfg" <<EOF
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
# A test server: no fsync per transaction, which the suite's disk load can stall for seconds.
forceSync=no
dataDir=$dir/data
clientPort=$ZOOKEEPER_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,stat,cons
maxClientCnxns=0
# Three snapshots and their transaction logs are kept, the rest purged hourly: a day of lock benches wrote 774 MB here.
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
EOF
  printf 'log4j.rootLogger=WARN, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n' > "$dir/conf/log4j.properties"
  nohup java -Xmx512m -Dzookeeper.admin.enableServer=false -Dzookeeper.4lw.commands.whitelist='*' \
    -cp "$dir/conf:/usr/share/java/zookeeper.jar" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/conf/zoo.cfg" \
    > "$STATE/zookeeper.log" 2>&1 &
  echo $! > "$STATE/zookeeper.pid"
  wait_for zookeeper zookeeper_ok
}

start_zookeeper_tls() { # TLS on 127.0.0.1 and plain on :: (IPv6 and IPv4), one server
  zookeeper_tls_ok >/dev/null 2>&1 && zookeeper_ipv6_ok >/dev/null 2>&1 && return 0
  # One this script started that does not answer on both ports (or not to these files) is replaced.
  local pid; pid=$(cat "$STATE/zookeeper-tls.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    log "zookeeper-tls (pid $pid) does not answer on both ports: stopping it"
    kill "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  fi
  log "starting zookeeper-tls: TLS on $ZOOKEEPER_TLS_PORT, plain on [::]:$ZOOKEEPER_IPV6_PORT"
  rm -rf "$ZK_TLS_DIR"
  local classpath
  classpath=$(node scripts/zookeeper-tls.mjs "$ZK_TLS_DIR" "$ZOOKEEPER_TLS_PORT" need "$ZOOKEEPER_IPV6_PORT" '::')
  nohup java -Xmx256m -Dzookeeper.admin.enableServer=false -Dzookeeper.4lw.commands.whitelist='*' \
    -cp "$classpath" org.apache.zookeeper.server.ZooKeeperServerMain "$ZK_TLS_DIR/zoo.cfg" \
    > "$STATE/zookeeper-tls.log" 2>&1 &
  echo $! > "$STATE/zookeeper-tls.pid"
  wait_for zookeeper-tls zookeeper_tls_ok
  wait_for zookeeper-tls zookeeper_ipv6_ok
}

start_etcd() {
  etcd_ok >/dev/null 2>&1 && return 0
  log "starting etcd on $ETCD_PORT"
  rm -rf "$STATE/etcd"
  nohup etcd --name rollcall --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "rollcall=http://127.0.0.1:$ETCD_PEER_PORT" --log-level warn \
    > "$STATE/etcd.log" 2>&1 &
  echo $! > "$STATE/etcd.pid"
  wait_for etcd etcd_ok
}

start_postgresql() {
  if ! pg_ok >/dev/null 2>&1; then
    log "starting postgresql on $PG_PORT"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
    wait_for postgresql pg_ok
  fi
  psql -h 127.0.0.1 -p $PG_PORT -U postgres -tAc "select 1 from pg_database where datname='rollcall'" | grep -q 1 ||
    psql -q -h 127.0.0.1 -p $PG_PORT -U postgres -c 'create database rollcall'
}

start_mysql() {
  if ! mysql_ok >/dev/null 2>&1; then
    log "starting mariadb on $MYSQL_PORT"
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_for mariadb mysql_ok
  fi
  mariadb -h 127.0.0.1 -P $MYSQL_PORT -u root -e 'create database if not exists rollcall'
}

# Rewrites the keys this script knows and keeps any other; tests may be reading the file, so it
# is replaced by one rename.
write_urls() {
  node -e '
    const fs = require("node:fs")
    const [file, ...pairs] = process.argv.slice(1)
    let urls = {}
    try { urls = JSON.parse(fs.readFileSync(file, "utf8")) } catch {}
    for (let i = 0; i < pairs.length; i += 2) urls[pairs[i]] = pairs[i + 1]
    fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(urls, null, 2)}\n`)
    fs.renameSync(`${file}.tmp`, file)
  ' "$STATE/urls.json" \
    redis "redis://127.0.0.1:$REDIS_PORT" \
    memcached "memcached://127.0.0.1:$MEMCACHED_PORT" \
    zookeeper "zookeeper://127.0.0.1:$ZOOKEEPER_PORT" \
    zookeeper-tls "zookeeper://127.0.0.1:$ZOOKEEPER_TLS_PORT" \
    zookeeper-tls-ca "$ZK_TLS_DIR/ca.pem" \
    zookeeper-tls-certfile "$ZK_TLS_DIR/client.pem" \
    zookeeper-tls-keyfile "$ZK_TLS_DIR/client.key" \
    zookeeper-tls-other-ca "$ZK_TLS_DIR/other-ca.pem" \
    zookeeper-ipv6 "zookeeper://[::1]:$ZOOKEEPER_IPV6_PORT" \
    etcd3 "etcd3+http://127.0.0.1:$ETCD_PORT" \
    postgresql "postgresql://postgres@127.0.0.1:$PG_PORT/rollcall" \
    mysql "mysql://root@127.0.0.1:$MYSQL_PORT/rollcall"
}

stop_started() {
  for name in redis memcached zookeeper zookeeper-tls etcd; do
    local pidfile="$STATE/$name.pid"
    [ -f "$pidfile" ] || continue
    local pid; pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then log "stopping $name (pid $pid)"; kill "$pid" || true; fi
    rm -f "$pidfile"
  done
}

case "${1:-up}" in
  up)
    install_missing
    start_redis; start_memcached; start_zookeeper; start_zookeeper_tls; start_etcd; start_postgresql; start_mysql
    write_urls
    log "all servers answer; URLs in $STATE/urls.json"
    ;;
  down) stop_started ;;
  status)
    for s in redis memcached zookeeper zookeeper_tls zookeeper_ipv6 etcd pg mysql; do
      if ${s}_ok >/dev/null 2>&1; then echo "$s: up"; else echo "$s: down"; fi
    done
    ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
