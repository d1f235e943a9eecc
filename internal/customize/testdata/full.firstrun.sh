#!/bin/sh

set +e

CURRENT_HOSTNAME=$(tr -d " \t\n\r" </etc/hostname)
NEW_HOSTNAME='station-7'
if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then
   /usr/lib/raspberrypi-sys-mods/imager_custom set_hostname "$NEW_HOSTNAME"
else
   echo "$NEW_HOSTNAME" >/etc/hostname
   sed -i "s/127.0.1.1.*$CURRENT_HOSTNAME/127.0.1.1\t$NEW_HOSTNAME/g" /etc/hosts
fi
FIRSTUSER=$(getent passwd 1000 | cut -d: -f1)
FIRSTUSERHOME=$(getent passwd 1000 | cut -d: -f6)
if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then
   /usr/lib/raspberrypi-sys-mods/imager_custom enable_ssh -k 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq8MG/N4le2dfNS0JOAMmvgJDtUxi25HmT+0oiEJQjj maker@host'
else
   install -o "$FIRSTUSER" -m 700 -d "$FIRSTUSERHOME/.ssh"
cat > "$FIRSTUSERHOME/.ssh/authorized_keys" <<'EOF'
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq8MG/N4le2dfNS0JOAMmvgJDtUxi25HmT+0oiEJQjj maker@host
EOF
   chown "$FIRSTUSER:$FIRSTUSER" "$FIRSTUSERHOME/.ssh/authorized_keys"
   chmod 600 "$FIRSTUSERHOME/.ssh/authorized_keys"
   echo 'PasswordAuthentication no' >>/etc/ssh/sshd_config
   systemctl enable ssh
fi
NEW_USER='maker'
if [ -f /usr/lib/userconf-pi/userconf ]; then
   /usr/lib/userconf-pi/userconf "$NEW_USER" '$6$klmnopqrstVWXYZa$OwcEm4mhCCqrjE9k83QaM9qjPV6edBVvgeXJYlQ/PliIJf29ISOZXsqwvhib6MqpCwnvIEJSkfda1Y2FrYL8U1'
else
   printf '%s:%s\n' "$FIRSTUSER" '$6$klmnopqrstVWXYZa$OwcEm4mhCCqrjE9k83QaM9qjPV6edBVvgeXJYlQ/PliIJf29ISOZXsqwvhib6MqpCwnvIEJSkfda1Y2FrYL8U1' | chpasswd -e
   if [ "$FIRSTUSER" != "$NEW_USER" ]; then
      usermod -l "$NEW_USER" "$FIRSTUSER"
      usermod -m -d "/home/$NEW_USER" "$NEW_USER"
      groupmod -n "$NEW_USER" "$FIRSTUSER"
      if grep -q "^autologin-user=" /etc/lightdm/lightdm.conf ; then
         sed /etc/lightdm/lightdm.conf -i -e "s/^autologin-user=.*/autologin-user=$NEW_USER/"
      fi
      if [ -f /etc/systemd/system/getty@tty1.service.d/autologin.conf ]; then
         sed /etc/systemd/system/getty@tty1.service.d/autologin.conf -i -e "s/$FIRSTUSER/$NEW_USER/"
      fi
      if [ -f /etc/sudoers.d/010_pi-nopasswd ]; then
         sed -i "s/^$FIRSTUSER /$NEW_USER /" /etc/sudoers.d/010_pi-nopasswd
      fi
   fi
fi
if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then
   /usr/lib/raspberrypi-sys-mods/imager_custom set_wlan 'Workshop' 'a045f9613c96471f137161d12948f3a4ac40aa52fb5375ff578f25a4b9213881' 'GB'
else
cat >/etc/wpa_supplicant/wpa_supplicant.conf <<'WPAEOF'
country=GB
ctrl_interface=DIR=/var/run/wpa_supplicant GROUP=netdev
ap_scan=1

update_config=1
network={
	ssid="Workshop"
	key_mgmt=WPA-PSK SAE
	psk=a045f9613c96471f137161d12948f3a4ac40aa52fb5375ff578f25a4b9213881
	ieee80211w=1
}
WPAEOF
   chmod 600 /etc/wpa_supplicant/wpa_supplicant.conf
   rfkill unblock wifi
   for filename in /var/lib/systemd/rfkill/*:wlan ; do
       echo 0 > "$filename"
   done
fi
if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then
   /usr/lib/raspberrypi-sys-mods/imager_custom set_keymap 'gb'
   /usr/lib/raspberrypi-sys-mods/imager_custom set_timezone 'Europe/London'
else
   rm -f /etc/localtime
   echo 'Europe/London' >/etc/timezone
   dpkg-reconfigure -f noninteractive tzdata
cat >/etc/default/keyboard <<'KBEOF'
XKBMODEL="pc105"
XKBLAYOUT='gb'
XKBVARIANT=""
XKBOPTIONS=""

KBEOF
   dpkg-reconfigure -f noninteractive keyboard-configuration
fi
rm -f /boot/firstrun.sh
sed -i 's| systemd.run.*||g' /boot/cmdline.txt
exit 0
