#!/bin/sh
# two_hosts.sh MPIRUN TEST_BINARY [args...]: two "hosts" on one machine, as two network
# namespaces joined by a veth pair; mpirun runs in the first and starts the second's daemon
# through plm_rsh_agent (ip netns exec instead of ssh); all traffic is OpenMPI over TCP.
# Exits 77 (ctest: skipped) with the reason when namespaces cannot be created.
set -u
mpirun=$1
shift
id=$$
a=rxa$id
b=rxb$id
dir=$(mktemp -d)
cleanup() {
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
if ! ip netns add "$a" 2> "$dir/err" || ! ip netns add "$b" 2>> "$dir/err"; then
  echo "skipped: cannot create network namespaces: $(cat "$dir/err")"
  exit 77
fi
if ! ip link add "va$id" type veth peer name "vb$id" 2> "$dir/err"; then
  echo "skipped: cannot create a veth pair: $(cat "$dir/err")"
  exit 77
fi
ip link set "va$id" netns "$a" && ip link set "vb$id" netns "$b" || exit 1
ip -n "$a" addr add 10.231.0.1/24 dev "va$id" && ip -n "$b" addr add 10.231.0.2/24 dev "vb$id" || exit 1
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "va$id" up && ip -n "$b" link set "vb$id" up || exit 1
# OpenMPI calls the agent as `agent HOST COMMAND...`, the command being a shell command line.
cat > "$dir/agent" <<AGENT
#!/bin/sh
shift
: > $dir/agent_used
exec ip netns exec $b sh -c "\$*"
AGENT
chmod +x "$dir/agent"
exec_in_a="ip netns exec $a"
$exec_in_a "$mpirun" --oversubscribe --bind-to none -H 10.231.0.1:1,10.231.0.2:1 -np 2 \
  --mca plm_rsh_agent "$dir/agent" --mca btl tcp,self \
  --mca btl_tcp_if_include 10.231.0.0/24 --mca oob_tcp_if_include 10.231.0.0/24 \
  "$@"
status=$?
if [ ! -f "$dir/agent_used" ]; then echo "the second host was not started through the agent" >&2; exit 1; fi
exit $status
