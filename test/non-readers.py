# Clients that never read: N TCP connections, each with a 4 KiB receive buffer and 1 KiB segments,
# each sending the same raw HTTP request and then reading nothing, until stdin closes. Node can set
# neither; with the defaults on loopback (64 KiB segments, buffers autotuned to megabytes) the
# kernel would absorb gigabytes of a thousand streams' updates before the server felt back-pressure.
# Usage: python3 test/non-readers.py <host> <port> <count> <request as hex>; prints "open" once connected.
import socket
import sys

host, port, count, request = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), bytes.fromhex(sys.argv[4])
sockets = []
for _ in range(count):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # Small segments: the sender sizes its send buffer by segments (loopback's are 64 KiB).
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1024)
    s.connect((host, port))
    s.sendall(request)
    sockets.append(s)
print("open", flush=True)
sys.stdin.read()
for s in sockets:
    s.close()
