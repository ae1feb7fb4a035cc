print("groupctl")
