// Setup file of the api-cluster project: its workers, and the cluster processes they launch, use the
// secure listeners the global setup published (test/cluster/secure-peers.ts), when it published them.
const secure = process.env.MEDIA_TEST_SECURE_PEERS;
if (secure) Object.assign(process.env, JSON.parse(secure) as Record<string, string>);
