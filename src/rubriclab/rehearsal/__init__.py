"""The paper-scale run rehearsed offline: a loopback server that answers as the providers do
(`server`), the answers it gives (`answers`) and the driver behind `make rehearse` (`run`)."""
