"""The paper-scale run rehearsed offline: a loopback server that answers as the providers do
(`server`), the answers it gives (`answers`) and the driver behind `make rehearse` (`run`)."""

# The identity the rehearsal declares for every model it serves (llm.per_model.<model>.fingerprint):
# its answers are the loopback server's, never the provider's (rubriclab.replication reads it).
REHEARSAL_FINGERPRINT = "rubriclab-rehearsal-server"
