print("widget")
