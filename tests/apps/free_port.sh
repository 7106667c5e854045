# Sourced by the scripts in tests/apps/ that start processes on ports they choose first.
# free_port: a port for a process that takes it as a flag. Chosen at random below the kernel's
# ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768 and up by default), where no
# process of another test binding port 0 can be handed it between this check and the bind.
free_port() {
  python3 -c '
import random, socket
low = 32768
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except OSError:
    pass
if low < 11000:  # an unusual ephemeral range: let the kernel choose
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    raise SystemExit
for _ in range(200):
    port = random.SystemRandom().randrange(max(low - 12000, 10000), low)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit("no free port")
'
}
