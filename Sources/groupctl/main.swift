Groupctl.main()
