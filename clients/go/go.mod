module media/clients/go

go 1.25

require (
	connectrpc.com/connect v1.19.1
	google.golang.org/protobuf v1.36.11
)
