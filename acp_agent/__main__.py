from acp_agent.cli import main

raise SystemExit(main())
